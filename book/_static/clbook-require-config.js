// The widget manager (embed-amd.js) finds its fonts and assets relative to the AMD module
// "@jupyter-widgets/html-manager/dist/..."; point that module path at the book's own copy,
// wherever the page sits in the site.
(function () {
  var base = document.currentScript.src.replace(/clbook-require-config\.js.*$/, "");
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": base + "vendor/html-manager" } });
})();
