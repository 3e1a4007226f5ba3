/* The ipywidgets embed script (html-manager 1.x) typesets widget labels with the
 * MathJax 2 call MathJax.Hub.Queue; the book loads MathJax 3, which has no Hub.
 * This shim gives every MathJax object that one call: MathJax 3 replaces
 * window.MathJax when it loads, so the setter below adds Hub to the new object at once.
 * Before MathJax is ready the elements are queued; afterwards they are typeset with
 * MathJax.typesetPromise. Loaded on every page, before MathJax and the widgets. */
(function () {
  "use strict";
  var pending = [];
  function typeset(mj, elements) {
    if (mj && typeof mj.typesetPromise === "function") {
      mj.typesetPromise(elements).catch(function () {});
      return true;
    }
    return false;
  }
  function hubFor(mj) {
    return {
      Queue: function (job) {
        var el = job && job[2];
        if (el && !typeset(mj, [el])) { pending.push(el); }
      }
    };
  }
  var current = window.MathJax || {};
  current.startup = current.startup || {};
  var previousReady = current.startup.ready;
  current.startup.ready = function () {
    if (previousReady) { previousReady(); } else { window.MathJax.startup.defaultReady(); }
    if (pending.length) { typeset(window.MathJax, pending.splice(0)); }
  };
  current.Hub = hubFor(current);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    enumerable: true,
    get: function () { return current; },
    set: function (value) {
      current = value;
      if (value && typeof value === "object" && !value.Hub) { value.Hub = hubFor(value); }
    }
  });
})();
