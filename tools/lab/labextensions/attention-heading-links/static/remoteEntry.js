// A link to a notebook's #heading lands on the heading, also when the link opens the notebook.
//
// JupyterLab (4.6) hands a link's fragment to the notebook once the notebook's file has loaded,
// before its Markdown cells have rendered their headings: it finds no heading and leaves the view
// at the top. (A second click, on the open notebook, lands.) This plugin waits until the opened
// notebook shows the heading and then asks JupyterLab to go there, with the notebook's own
// setFragment. Written by hand as a JupyterLab "federated" extension, no build step: the
// container below is what JupyterLab's loader calls (init, then get("./extension")), and the
// plugin needs no shared package. make lab adds this folder to the lab's extensions through
// tools/jupyter_server_config.py; tests/test_lab_links.py checks where each link's view lands.
(function () {
  "use strict";
  var COMMAND = "rendermime:handle-local-link";
  var WAIT_MS = 15000;

  function heading(widget, name) {
    var found = widget.node.querySelectorAll(".jp-RenderedMarkdown [data-jupyter-id], .jp-RenderedMarkdown [id]");
    for (var element of found) {
      if ((element.dataset.jupyterId || element.id) === name) return element;
    }
    return null;
  }

  function inView(widget, element) {
    var scroller = widget.node.querySelector(".jp-WindowedPanel-outer") || widget.content.node;
    var box = scroller.getBoundingClientRect();
    var own = element.getBoundingClientRect();
    return own.top >= box.top - 1 && own.bottom <= box.bottom + 1;
  }

  function land(app, path, fragment) {
    var name = decodeURIComponent(fragment.replace(/^#/, ""));
    if (!name || name.indexOf("=") !== -1) return; // #cell-id=..., #heading=...: JupyterLab's own
    var started = Date.now();
    var tries = 0;
    function step() {
      var widget = null;
      for (var w of app.shell.widgets("main")) {
        if (w.context && w.context.path === path && w.content && w.content.setFragment) widget = w;
      }
      var element = widget && heading(widget, name);
      if (element && inView(widget, element)) {
        // landed; look once more after the cells above have had time to render (math, pictures)
        if (tries++ < 3) window.setTimeout(step, 400);
        return;
      }
      if (element) widget.content.setFragment("#" + name);
      if (Date.now() - started < WAIT_MS) window.setTimeout(step, element ? 300 : 100);
    }
    step();
  }

  var plugin = {
    id: "attention-heading-links:plugin",
    description: "A link to a notebook's #heading lands on the heading when it opens the notebook.",
    autoStart: true,
    activate: function (app) {
      app.commands.commandExecuted.connect(function (_, executed) {
        var args = executed.args || {};
        if (executed.id !== COMMAND || !args.id || !args.path || !/\.ipynb$/.test(args.path)) return;
        Promise.resolve(executed.result).then(function () { land(app, args.path, args.id); }, function () {});
      });
    }
  };

  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB["attention-heading-links"] = {
    init: function () { return Promise.resolve(); },
    get: function () {
      return Promise.resolve(function () { return { __esModule: true, default: [plugin] }; });
    }
  };
})();
