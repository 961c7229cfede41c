// Loaded after require.js and before the widget html-manager (see nb_ipywidgets_js in _config.yml),
// so that embedded widgets render with no network:
// - The html-manager first asks require.js for a widget's front-end module by its bare name and
//   only falls back to a CDN when that fails; the name "anywidget" is pointed at the copy vendored
//   next to this file (npm package anywidget, the same version as the Python package).
// - Its bundled modules find their icon fonts next to their own module URL, which require.js
//   derives from the module name ("@jupyter-widgets/html-manager/dist/..."): that name is mapped to
//   the vendored html-manager folder next to this file, where the fonts are.
// - The widgets typeset their labels through MathJax 2's MathJax.Hub.Queue; the book loads
//   MathJax 3, which has no Hub. A small Hub.Queue that calls MathJax 3's typesetPromise is added
//   once MathJax is in place (deferred scripts run before DOMContentLoaded; widgets render on load).
// Paths come from this script's own URL, so they work at any page depth.
(function () {
  "use strict";
  var here = document.currentScript.src.replace(/[?#].*$/, "").replace(/[^/]*$/, "");
  window.__jupyter_widgets_assets_path__ = here + "html-manager/";
  window.requirejs.config({
    paths: {
      anywidget: here + "anywidget/index",
      "@jupyter-widgets/html-manager/dist": here + "html-manager",
    },
  });
  function addHub() {
    var mj = window.MathJax;
    if (!mj || mj.Hub || typeof mj.typesetPromise !== "function") return;
    mj.Hub = {
      Queue: function () {
        for (var i = 0; i < arguments.length; i++) {
          var job = arguments[i];
          if (Array.isArray(job) && job[0] === "Typeset") {
            var el = job[2];
            var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
            ready.then(function () { return mj.typesetPromise(el ? [el] : undefined); })
              .catch(function (e) { console.warn("MathJax typeset of a widget failed", e); });
          }
        }
      },
    };
  }
  document.addEventListener("DOMContentLoaded", addHub);
  window.addEventListener("load", addHub);
})();
