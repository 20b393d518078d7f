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

// On a phone the book theme's menu button (the visible one) opens nothing: the theme listens on the
// first .primary-toggle only, which the book layout hides. Hand the click on to it.
window.addEventListener("DOMContentLoaded", () => {
  const toggles = [...document.querySelectorAll(".primary-toggle")];
  const modal = document.getElementById("pst-primary-sidebar-modal");
  if (toggles.length < 2 || !modal) return;
  toggles.slice(1).forEach((button) => button.addEventListener("click", () => {
    if (window.matchMedia("(max-width: 959.98px)").matches && !modal.open) toggles[0].click();
  }));
});
