// report.html's page script: draws every chart from the JSON figure beside it, makes tables
// sortable and filterable, and shows script errors on the page (data-script-errors on <body>).
(function () {
  "use strict";
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    var el = document.getElementById("script-errors");
    if (el) { el.textContent = "Script errors:\n" + errors.join("\n"); el.hidden = false; }
    document.body.setAttribute("data-script-errors", String(errors.length));
  }
  window.addEventListener("error", function (e) { fail(e.message || e); });

  function renderCharts() {
    var divs = document.querySelectorAll("div.chart");
    var pending = divs.length;
    function done() {
      pending -= 1;
      if (pending === 0) { document.body.setAttribute("data-charts-done", String(divs.length)); }
    }
    if (pending === 0) { document.body.setAttribute("data-charts-done", "0"); return; }
    if (typeof Plotly === "undefined") { fail("plotly.js did not load"); return; }
    divs.forEach(function (div) {
      var mark = function (ok) {
        div.setAttribute("data-rendered", ok ? "1" : "0");
        div.setAttribute("data-traces", String(div.querySelectorAll("g.trace").length));
        done();
      };
      try {
        var fig = JSON.parse(document.getElementById(div.id + "-data").textContent);
        var config = Object.assign({ responsive: true, displaylogo: false }, fig.config || {});
        Plotly.newPlot(div, fig.data || [], fig.layout || {}, config).then(function (gd) {
          mark(!!gd.querySelector(".main-svg") && (gd.data || []).length > 0);
        }, function (err) { fail(div.id + ": " + err); mark(false); });
      } catch (err) { fail(div.id + ": " + err); mark(false); }
    });
  }

  function cellKey(td, numeric) {
    var v = td.getAttribute("data-sort");
    if (numeric) { var n = parseFloat(v === null ? td.textContent : v); return isNaN(n) ? -Infinity : n; }
    return (v === null ? td.textContent : v).toLowerCase();
  }

  function initTables() {
    document.querySelectorAll("table.data").forEach(function (table) {
      var ths = table.querySelectorAll("thead th");
      ths.forEach(function (th, col) {
        th.addEventListener("click", function () {
          var numeric = th.classList.contains("num");
          var asc = th.getAttribute("aria-sort") !== "ascending";
          ths.forEach(function (o) { o.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", asc ? "ascending" : "descending");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (a, b) {
            var x = cellKey(a.cells[col], numeric), y = cellKey(b.cells[col], numeric);
            return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
          });
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
    document.querySelectorAll("input.table-filter").forEach(function (input) {
      var table = document.getElementById(input.getAttribute("data-table"));
      input.addEventListener("input", function () {
        var q = input.value.toLowerCase();
        Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
          var text = (r.textContent + " " + (r.getAttribute("data-search") || "")).toLowerCase();
          r.hidden = q !== "" && text.indexOf(q) < 0;
        });
      });
    });
  }

  try { initTables(); } catch (err) { fail("tables: " + err); }
  renderCharts();
})();
