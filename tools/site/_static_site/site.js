// A box that scrolls sideways (a wide equation or output on a phone) can be reached and scrolled with the keyboard.
function siteTabStops() {
  document.querySelectorAll('mjx-container[display="true"], .cell_output, .output').forEach((el) => {
    if (el.scrollWidth > el.clientWidth + 1 && !el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
  });
}
window.addEventListener("load", () => {
  siteTabStops();
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(siteTabStops);
});
window.addEventListener("resize", siteTabStops);
