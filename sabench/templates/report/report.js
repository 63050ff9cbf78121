// sabench report: the page's filter box, "only drift" toggles and the paper page's two columns.
// Plain JS, no libraries, no network: works from file://.
(function () {
  "use strict";
  var input = document.getElementById("filter");
  var count = document.getElementById("filter-count");
  var items = Array.prototype.slice.call(document.querySelectorAll(".f"));
  var texts = null;
  var onlyDrift = document.getElementById("only-drift");
  var onlyDiffer = document.getElementById("only-differ");

  function apply() {
    if (texts === null) {
      texts = items.map(function (el) { return el.textContent.toLowerCase(); });
    }
    var q = input ? input.value.trim().toLowerCase() : "";
    var drift = onlyDrift && onlyDrift.checked;
    var differ = onlyDiffer && onlyDiffer.checked;
    var shown = 0;
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var hide = (q && texts[i].indexOf(q) < 0) ||
        (drift && el.getAttribute("data-ok") === "1") ||
        (differ && el.getAttribute("data-differ") === "0");
      el.hidden = !!hide;
      if (!hide) { shown++; }
    }
    if (count) {
      count.textContent = (q || drift || differ) ? shown + " of " + items.length + " shown" : "";
    }
  }

  var params = new URLSearchParams(location.hash.slice(1));
  if (input) {
    if (params.get("q")) { input.value = params.get("q"); }
    input.addEventListener("input", apply);
  }
  if (onlyDrift) { onlyDrift.addEventListener("change", apply); }
  if (onlyDiffer) { onlyDiffer.addEventListener("change", apply); }
  if ((input && input.value) || params.get("q")) { apply(); }

  var left = document.getElementById("col-left");
  var right = document.getElementById("col-right");
  var all = document.getElementById("col-all");
  function columns() {
    var keep = all && all.checked ? null : [left.value, right.value];
    var cells = document.querySelectorAll("[data-col]");
    for (var i = 0; i < cells.length; i++) {
      var col = cells[i].getAttribute("data-col");
      cells[i].hidden = keep !== null && keep.indexOf(col) < 0;
    }
  }
  if (left && right) {
    left.addEventListener("change", columns);
    right.addEventListener("change", columns);
    if (all) { all.addEventListener("change", columns); }
    columns();
  }
}());
