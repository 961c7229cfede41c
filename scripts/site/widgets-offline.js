// Loaded after require.js (see nb_ipywidgets_js in _config.yml), so that embedded widgets render
// fast and with no network.
// - The book's labs (anywidgets of ropegeo.book.widgets) are rendered by this file itself, as soon as
//   the page is parsed: their JavaScript (embedded in the widget state) is imported and drawn
//   against a small stand-in for the widget model, in place of the lab's static preview (drawn at
//   build time, scripts/site/ropegeo_site.py), which the live lab replaces in the same task, so the
//   page does not move. The 3.6 MB widget html-manager is not needed for them.
// - Any other embedded widget is left to the html-manager (embed-amd.js), loaded from here only
//   on pages that have one:
//   - it first asks require.js for a widget's front-end module by its bare name and only falls back
//     to a CDN when that fails; the name "anywidget" is pointed at the copy vendored next to this
//     file (npm package anywidget, the same version as the Python package);
//   - its bundled modules find their icon fonts next to their own module URL, which require.js
//     derives from the module name ("@jupyter-widgets/html-manager/dist/..."): that name is mapped
//     to the vendored html-manager folder next to this file, where the fonts are;
//   - widgets typeset their labels through MathJax 2's MathJax.Hub.Queue; the book loads MathJax 3,
//     which has no Hub. A small Hub.Queue that calls MathJax 3's typesetPromise is added once
//     MathJax is in place.
// Paths come from this script's own URL, so they work at any page depth.
(function () {
  "use strict";
  var here = document.currentScript.src.replace(/[?#].*$/, "").replace(/[^/]*$/, "");
  var VIEW = "application/vnd.jupyter.widget-view+json";
  var STATE = "application/vnd.jupyter.widget-state+json";
  window.__jupyter_widgets_assets_path__ = here + "html-manager/";
  if (window.requirejs) {
    window.requirejs.config({
      paths: {
        anywidget: here + "anywidget/index",
        "@jupyter-widgets/html-manager/dist": here + "html-manager",
      },
    });
  }

  // ------------------------------------------------------------------ the labs, without the manager
  function isLab(model) {
    var st = model && model.state;
    return !!(model && model.model_name === "AnyModel" && st && typeof st._esm === "string"
      && String(st._anywidget_id || "").indexOf("ropegeo.book.widgets.") === 0);
  }
  // what a lab's JavaScript uses of the widget model (a static page has no kernel to sync with)
  function standInModel(state) {
    var data = Object.assign({}, state), listeners = {};
    return {
      get: function (k) { return data[k]; },
      set: function (k, v) { data[k] = v; },
      on: function (ev, f) { (listeners[ev] = listeners[ev] || []).push(f); },
      off: function (ev, f) { listeners[ev] = (listeners[ev] || []).filter(function (g) { return g !== f; }); },
      save_changes: function () {},
      send: function () {},
    };
  }
  var modules = {}; // one import per distinct module text: {promise, mod (once loaded)}
  var styled = {};
  // A lab's module is the book's own code with no imports: its "export" keywords are dropped and it
  // runs as a function at once, so the lab can be drawn in the same task as the page is parsed
  // (an import() would wait behind the page's deferred scripts, MathJax's among them). Anything
  // else is imported as a module.
  function asFunction(esm) {
    if (/^\s*import[\s{*(]/m.test(esm)) return null;
    var body = esm.replace(/^export default /m, "return ").replace(/^export (const|let|function|class) /gm, "$1 ");
    if (/^export /m.test(body)) return null;
    try { return { default: new Function("\"use strict\";\n" + body)() }; } catch (e) { return null; }
  }
  function load(esm) {
    if (!modules[esm]) {
      var entry = modules[esm] = { mod: asFunction(esm) };
      if (entry.mod) entry.promise = Promise.resolve(entry.mod);
      else {
        var url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
        entry.promise = import(url).then(function (mod) { entry.mod = mod; return mod; });
      }
    }
    return modules[esm];
  }
  function mount(view, state) {
    var host = document.createElement("div");
    host.className = "ropegeo-lab-host";
    view.parentNode.insertBefore(host, view);
    var prev = host.previousElementSibling;
    var preview = prev && prev.classList.contains("ropegeo-lab-preview") ? prev : null;
    if (state._css && !styled[state._anywidget_id]) {
      styled[state._anywidget_id] = true;
      var style = document.createElement("style");
      style.textContent = state._css;
      document.head.appendChild(style);
    }
    function draw(mod) {
      mod.default.render({ model: standInModel(state), el: host });
      if (preview) preview.remove(); // same task as the drawing: no frame without a lab
    }
    var entry = load(state._esm);
    if (entry.mod) { draw(entry.mod); return; } // imported while the page was parsed: draw now
    entry.promise.then(draw).catch(function (e) {
      console.error("a lab of the book failed to start", e);
      host.remove();
    });
  }
  function readStates() {
    var states = {};
    document.querySelectorAll('script[type="' + STATE + '"]').forEach(function (s) {
      try { Object.assign(states, JSON.parse(s.textContent).state || {}); } catch (e) { /* left to the manager */ }
    });
    return states;
  }
  // the widget state sits in the page's head, before this script: the labs' modules are loaded
  // now, while the rest of the page is parsed, so that they can be drawn as soon as it is
  var early = readStates();
  Object.keys(early).forEach(function (id) { if (isLab(early[id])) load(early[id].state._esm); });
  var started = false;
  function start() {
    if (started) return;
    started = true;
    var states = readStates();
    var others = 0;
    document.querySelectorAll('script[type="' + VIEW + '"]').forEach(function (view) {
      var spec;
      try { spec = JSON.parse(view.textContent); } catch (e) { others++; return; }
      var model = states[spec.model_id];
      if (!isLab(model)) { others++; return; }
      view.setAttribute("type", "application/vnd.ropegeo.lab-view+json"); // the manager leaves it alone
      mount(view, model.state);
    });
    if (others && window.requirejs) {
      var s = document.createElement("script");
      s.src = here + "html-manager/embed-amd.js";
      document.head.appendChild(s);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("readystatechange", function () { if (document.readyState !== "loading") start(); });
    document.addEventListener("DOMContentLoaded", start);
  } else start();

  // ------------------------------------------------------------------ MathJax 2's Hub for the manager
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
