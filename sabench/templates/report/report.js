// sabench report: the page's filter box and SAU filters, sortable tables, the site-wide search,
// the paper page's two columns, a file page's cited lines and the code diff of two runs.
// Plain JS, no libraries, no network: works from file://. The location's hash can set every
// control: #q=text&judge=exec&dim=D1&verdict=drifted&fm=omission&sort=<table id>:<column>[:desc]
// &search=text (and on a diff page a=<run>&b=<run>&file=<path>).
(function () {
  "use strict";
  var params = new URLSearchParams(location.hash.slice(1));
  function $(id) { return document.getElementById(id); }

  // ----- the filter box, "only drift", "only where runs differ" and the SAU filters
  var input = $("filter");
  var count = $("filter-count");
  var items = Array.prototype.slice.call(document.querySelectorAll(".f"));
  var texts = null;
  var onlyDrift = $("only-drift");
  var onlyDiffer = $("only-differ");
  var selects = { judge: $("f-judge"), dim: $("f-dim"), verdict: $("f-verdict"), fm: $("f-fm") };

  function words(el, name) { return (el.getAttribute(name) || "").split(" "); }
  function has(list, judge, value) {
    for (var i = 0; i < list.length; i++) {
      var at = list[i].indexOf(":");
      if (list[i].slice(at + 1) === value && (!judge || list[i].slice(0, at) === judge)) { return true; }
    }
    return false;
  }
  function value(name) { return selects[name] ? selects[name].value : ""; }

  function apply() {
    if (texts === null) {
      texts = items.map(function (el) { return el.textContent.toLowerCase(); });
    }
    var q = input ? input.value.trim().toLowerCase() : "";
    var drift = onlyDrift && onlyDrift.checked;
    var differ = onlyDiffer && onlyDiffer.checked;
    var judge = value("judge"), dim = value("dim"), verdict = value("verdict"), fm = value("fm");
    var sauFilter = judge || dim || verdict || fm;
    var shown = 0;
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var sau = el.hasAttribute("data-v");
      var hide = (q && texts[i].indexOf(q) < 0) ||
        (drift && el.getAttribute("data-ok") === "1") ||
        (differ && el.getAttribute("data-differ") === "0") ||
        (sauFilter && sau && (
          (dim && el.getAttribute("data-dim") !== dim) ||
          (judge && words(el, "data-j").indexOf(judge) < 0) ||
          (verdict && !has(words(el, "data-v"), judge, verdict)) ||
          (fm && !has(words(el, "data-fm"), judge, fm))));
      el.hidden = !!hide;
      if (!hide) { shown++; }
    }
    if (count) {
      count.textContent = (q || drift || differ || sauFilter) ? shown + " of " + items.length + " shown" : "";
    }
  }

  if (input) {
    if (params.get("q")) { input.value = params.get("q"); }
    input.addEventListener("input", apply);
  }
  var filtered = !!(input && input.value);
  Object.keys(selects).forEach(function (name) {
    var sel = selects[name];
    if (!sel) { return; }
    if (params.get(name)) { sel.value = params.get(name); filtered = true; }
    sel.addEventListener("change", apply);
  });
  if (onlyDrift) { onlyDrift.addEventListener("change", apply); }
  if (onlyDiffer) { onlyDiffer.addEventListener("change", apply); }
  if (filtered) { apply(); }

  // ----- sortable tables: click a header (again: the other way); numbers sort as numbers
  function key(cell) {
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    var text = v !== null ? v : cell.textContent.trim();
    var n = parseFloat(text.replace(/,/g, ""));
    return isNaN(n) || !/^[-+]?[\d.,]/.test(text) ? text.toLowerCase() : n;
  }
  function columnOf(th) {
    // the column a header cell stands over, counting the colspans and rowspans above it
    var table = th.closest("table"), rows = table.tHead.rows, taken = [];
    for (var r = 0; r < rows.length; r++) {
      var col = 0;
      for (var c = 0; c < rows[r].cells.length; c++) {
        var cell = rows[r].cells[c];
        while (taken[r] && taken[r][col]) { col++; }
        if (cell === th) { return col; }
        for (var dr = 0; dr < cell.rowSpan; dr++) {
          taken[r + dr] = taken[r + dr] || [];
          for (var dc = 0; dc < cell.colSpan; dc++) { taken[r + dr][col + dc] = true; }
        }
        col += cell.colSpan;
      }
    }
    return -1;
  }
  function sortTable(table, col, desc) {
    var body = table.tBodies[0];
    if (!body || col < 0) { return; }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = key(x.cells[col]), b = key(y.cells[col]);
      if (typeof a !== typeof b) { a = String(a); b = String(b); }
      var d = a < b ? -1 : (a > b ? 1 : 0);
      return desc ? -d : d;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    var heads = table.tHead.querySelectorAll("th");
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    table.setAttribute("data-sorted", col + (desc ? ":desc" : ""));
    return heads;
  }
  var tables = document.querySelectorAll("table.sortable");
  for (var t = 0; t < tables.length; t++) {
    var heads = tables[t].tHead ? tables[t].tHead.querySelectorAll("th") : [];
    for (var h = 0; h < heads.length; h++) {
      if (heads[h].colSpan > 1) { continue; }
      heads[h].classList.add("sort");
      heads[h].title = "sort by this column";
      heads[h].addEventListener("click", function (event) {
        if (event.target.closest("a")) { return; }
        var th = event.currentTarget, table = th.closest("table");
        var desc = th.getAttribute("aria-sort") === "ascending";
        sortTable(table, columnOf(th), desc);
        th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      });
    }
  }
  if (params.get("sort")) {
    var spec = params.get("sort").split(":");
    var target = $(spec[0]);
    if (target) { sortTable(target, parseInt(spec[1], 10), spec[2] === "desc"); }
  }

  // ----- the site-wide search: an index of agents, papers, runs and SAUs, loaded on first use
  var search = $("search"), results = $("search-results");
  var root = search ? search.getAttribute("data-root") : "";
  var loading = false;
  function load(then) {
    if (window.SABENCH_SEARCH) { then(); return; }
    if (loading) { return; }
    loading = true;
    var script = document.createElement("script");
    script.src = root + "assets/search-index.js";
    script.onload = then;
    document.body.appendChild(script);
  }
  function find() {
    var q = search.value.trim().toLowerCase();
    results.innerHTML = "";
    if (q.length < 2 || !window.SABENCH_SEARCH) { results.hidden = true; return; }
    var terms = q.split(/\s+/), found = 0, all = window.SABENCH_SEARCH;
    for (var i = 0; i < all.length && found < 30; i++) {
      var e = all[i], text = (e[1] + " " + e[3]).toLowerCase(), ok = true;
      for (var k = 0; k < terms.length; k++) { if (text.indexOf(terms[k]) < 0) { ok = false; break; } }
      if (!ok) { continue; }
      var li = document.createElement("li"), a = document.createElement("a");
      a.href = root + e[2];
      a.className = "hit-" + e[0].toLowerCase();
      a.textContent = e[0] + " " + e[1] + (e[3] ? " — " + e[3].slice(0, 90) : "");
      li.appendChild(a);
      results.appendChild(li);
      found++;
    }
    if (!found) {
      var none = document.createElement("li");
      none.textContent = "nothing found";
      results.appendChild(none);
    }
    results.hidden = false;
  }
  if (search && results) {
    search.addEventListener("focus", function () { load(find); });
    search.addEventListener("input", function () { load(find); });
    document.addEventListener("click", function (event) {
      if (!event.target.closest(".site-search")) { results.hidden = true; }
    });
    if (params.get("search")) { search.value = params.get("search"); load(find); }
  }

  // ----- the paper page's columns
  var left = $("col-left"), right = $("col-right"), all = $("col-all");
  function columns() {
    var keep = all && all.checked ? null : [left.value, right.value];
    var cells = document.querySelectorAll("[data-col]");
    for (var i = 0; i < cells.length; i++) {
      cells[i].hidden = keep !== null && keep.indexOf(cells[i].getAttribute("data-col")) < 0;
    }
  }
  if (left && right) {
    left.addEventListener("change", columns);
    right.addEventListener("change", columns);
    if (all) { all.addEventListener("change", columns); }
    columns();
  }

  // ----- a file page: #L14-16 marks the cited lines
  function mark() {
    var m = /^#L(\d+)(?:-L?(\d+))?$/.exec(location.hash);
    var old = document.querySelectorAll("#whole-file .hit");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("hit"); }
    if (!m) { return; }
    var first = parseInt(m[1], 10), last = m[2] ? parseInt(m[2], 10) : first;
    for (var n = first; n <= last; n++) {
      var line = $("L" + n);
      if (line) { line.classList.add("hit"); }
    }
    if ($("L" + first)) { $("L" + first).scrollIntoView({ block: "center" }); }
  }
  if ($("whole-file")) { mark(); window.addEventListener("hashchange", mark); }

  // ----- the diff of two runs' versions of a file (a longest common subsequence of lines)
  var data = $("diff-data");
  if (data) {
    var runs = JSON.parse(data.textContent);
    var selA = $("diff-a"), selB = $("diff-b"), selFile = $("diff-file");
    var out = $("diff-out"), summary = $("diff-summary");
    if (params.get("a")) { selA.value = params.get("a"); }
    if (params.get("b")) { selB.value = params.get("b"); }
    var fileChoice = params.get("file");
    var esc = function (s) { return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); };
    var diffLines = function (a, b) {
      var pre = 0, post = 0;
      while (pre < a.length && pre < b.length && a[pre] === b[pre]) { pre++; }
      while (post < a.length - pre && post < b.length - pre &&
             a[a.length - 1 - post] === b[b.length - 1 - post]) { post++; }
      var x = a.slice(pre, a.length - post), y = b.slice(pre, b.length - post), ops = [];
      var i, j, w = y.length + 1;
      if (x.length * y.length > 4e7) {  // too large to align: all of one, then all of the other
        x.forEach(function (l) { ops.push(["-", l]); });
        y.forEach(function (l) { ops.push(["+", l]); });
      } else {
        var L = new Uint32Array((x.length + 1) * w);
        for (i = x.length - 1; i >= 0; i--) {
          for (j = y.length - 1; j >= 0; j--) {
            L[i * w + j] = x[i] === y[j] ? L[(i + 1) * w + j + 1] + 1 :
              Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
          }
        }
        i = 0; j = 0;
        while (i < x.length || j < y.length) {
          if (i < x.length && j < y.length && x[i] === y[j]) { ops.push([" ", x[i]]); i++; j++; }
          else if (i < x.length && (j >= y.length || L[(i + 1) * w + j] >= L[i * w + j + 1])) { ops.push(["-", x[i]]); i++; }
          else { ops.push(["+", y[j]]); j++; }
        }
      }
      return { pre: a.slice(0, pre), ops: ops, post: a.slice(a.length - post) };
    };
    var show = function () {
      var A = runs[selA.value] || { files: {} }, B = runs[selB.value] || { files: {} };
      var names = Object.keys(A.files).concat(Object.keys(B.files)).filter(function (n, i, s) {
        return s.indexOf(n) === i;
      }).sort();
      var current = fileChoice || selFile.value;
      fileChoice = null;
      selFile.innerHTML = "";
      names.forEach(function (n) {
        var o = document.createElement("option");
        var same = A.files[n] === B.files[n];
        o.value = n;
        o.textContent = n + (same ? " (same)" : (A.files[n] === undefined ? " (right only)" : (B.files[n] === undefined ? " (left only)" : " (differs)")));
        selFile.appendChild(o);
      });
      if (names.indexOf(current) < 0) {
        current = names.filter(function (n) { return A.files[n] !== B.files[n]; })[0] || names[0];
      }
      if (current === undefined) { out.innerHTML = ""; summary.textContent = "no files"; return; }
      selFile.value = current;
      var a = (A.files[current] || "").split("\n"), b = (B.files[current] || "").split("\n");
      var d = diffLines(a, b), html = [], na = 1, nb = 1, added = 0, removed = 0;
      var line = function (cls, x, y, text) {
        html.push('<span class="' + cls + '"><span class="ln">' + x + '</span><span class="ln">' + y + "</span>" + esc(text) + "</span>\n");
      };
      var context = function (lines) {
        lines.forEach(function (l, k) {
          if (lines.length <= 8 || k < 3 || k >= lines.length - 3) { line("ctx", na, nb, "  " + l); }
          else if (k === 3) { line("skip", "…", "…", "  (" + (lines.length - 6) + " unchanged lines)"); }
          na++; nb++;
        });
      };
      context(d.pre);
      d.ops.forEach(function (op) {
        if (op[0] === " ") { line("ctx", na++, nb++, "  " + op[1]); }
        else if (op[0] === "-") { line("del", na++, "", "- " + op[1]); removed++; }
        else { line("add", "", nb++, "+ " + op[1]); added++; }
      });
      context(d.post);
      out.innerHTML = html.join("");
      summary.textContent = current + ": " + removed + " line" + (removed === 1 ? "" : "s") +
        " only in " + A.name + ", " + added + " only in " + B.name + ".";
    };
    selA.addEventListener("change", show);
    selB.addEventListener("change", show);
    selFile.addEventListener("change", show);
    show();
  }
}());
