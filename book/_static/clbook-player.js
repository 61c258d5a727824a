// Panels that move without a kernel (tools/frames.py, book/_ext/clbook_sphinx.py): each .clbook-player holds the
// panel's controls and its precomputed frames; moving a control shows the stored frame for that value, with the
// other controls at their initial values. The time from the move to the frame shown is kept in data-last-ms.
// The frames are fetched and decoded once, when the player comes near the screen (data-preloaded is set when all are
// in), so that a move swaps in an image the browser already holds instead of waiting for the network.
(function () {
  function setup(player) {
    var spec = JSON.parse(player.getAttribute("data-spec"));
    var img = player.querySelector("img.clbook-player-frame");
    var box = player.querySelector(".clbook-player-controls");
    var inputs = {};
    var started = 0;
    img.addEventListener("load", function () {
      if (started) { player.setAttribute("data-last-ms", (performance.now() - started).toFixed(1)); started = 0; }
    });
    function show(name) {
      var key = "";
      spec.controls.forEach(function (c) {
        if (c.name !== name) { inputs[c.name].value = String(c.default); inputs[c.name].dispatchEvent(new Event("sync")); }
      });
      var k = Number(inputs[name].value);
      var c = spec.controls.filter(function (x) { return x.name === name; })[0];
      if (k !== c.default) { key = name + "=" + k; }
      var src = spec.base + spec.frames[key];
      player.setAttribute("data-key", key);
      if (img.getAttribute("src") === src) { player.setAttribute("data-last-ms", "0"); return; }
      started = performance.now();
      img.setAttribute("src", src);
    }
    spec.controls.forEach(function (c) {
      var row = document.createElement("label");
      row.className = "clbook-player-control";
      var text = document.createElement("span");
      text.textContent = c.label + " ";
      var input;
      var shown = document.createElement("output");
      if (c.labels.length > 6 || isNaN(Number(c.labels[0]))) {
        input = document.createElement("select");
        c.labels.forEach(function (label, k) {
          var o = document.createElement("option"); o.value = String(k); o.textContent = label; input.appendChild(o);
        });
      } else {
        input = document.createElement("input");
        input.type = "range"; input.min = "0"; input.max = String(c.labels.length - 1); input.step = "1";
      }
      input.value = String(c.default);
      input.setAttribute("data-control", c.name);
      function label() { shown.textContent = " " + c.labels[Number(input.value)]; }
      label();
      input.addEventListener("input", function () { label(); show(c.name); });
      input.addEventListener("change", function () { label(); show(c.name); });
      input.addEventListener("sync", label);
      inputs[c.name] = input;
      row.appendChild(text); row.appendChild(input);
      if (input.tagName === "INPUT") { row.appendChild(shown); }
      box.appendChild(row);
    });
  }
  function preload(player) {
    var spec = JSON.parse(player.getAttribute("data-spec"));
    var keys = Object.keys(spec.frames);
    var left = keys.length;
    player.clbookFrames = keys.map(function (key) {
      var im = new Image();
      im.src = spec.base + spec.frames[key];
      var done = function () { left -= 1; if (left === 0) { player.setAttribute("data-preloaded", ""); } };
      (im.decode ? im.decode() : Promise.resolve()).then(done, done);
      return im;
    });
  }
  function watch(player) {
    if (!("IntersectionObserver" in window)) { preload(player); return; }
    var seen = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) { seen.disconnect(); preload(player); }
    }, {rootMargin: "600px 0px"});
    seen.observe(player);
  }
  function init() { document.querySelectorAll(".clbook-player").forEach(function (p) { setup(p); watch(p); }); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
