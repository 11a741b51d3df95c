// KernelBench Hard site behaviour: charts, tabs, keyboard grid, sortable/filterable tables. No network use.
(function () {
  "use strict";

  function renderCharts() {
    document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (node) {
      var target = document.getElementById(node.getAttribute("data-chart"));
      if (!target || typeof Plotly === "undefined") return;
      var fig = JSON.parse(node.textContent);
      // the container takes the figure's height, so responsive width changes never overlap the next chart
      target.style.height = ((fig.layout && fig.layout.height) || 420) + "px";
      var config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] };
      Plotly.newPlot(target, fig.data, fig.layout, config).then(function () {
        target.setAttribute("data-rendered", "true");
      });
      target.on && target.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        var href = point && point.customdata;
        if (Array.isArray(href)) href = href[0];
        if (typeof href === "string" && href && href.indexOf(":") === -1) window.location.href = href;
      });
    });
  }

  function setupTabs() {
    document.querySelectorAll('[role="tablist"]').forEach(function (list) {
      var tabs = Array.prototype.slice.call(list.querySelectorAll('[role="tab"]'));
      function select(tab, focus) {
        tabs.forEach(function (t) {
          var on = t === tab;
          t.setAttribute("aria-selected", on ? "true" : "false");
          t.tabIndex = on ? 0 : -1;
          document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
        });
        if (focus) tab.focus();
        if (history.replaceState) history.replaceState(null, "", "#" + tab.id);
      }
      tabs.forEach(function (tab, i) {
        tab.addEventListener("click", function () { select(tab, false); });
        tab.addEventListener("keydown", function (e) {
          var next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
          if (next === undefined) return;
          e.preventDefault();
          select(tabs[(next + tabs.length) % tabs.length], true);
        });
      });
      var wanted = location.hash && document.getElementById(location.hash.slice(1));
      if (wanted && tabs.indexOf(wanted) >= 0) select(wanted, false);
    });
  }

  // Arrow keys move between the links of the leaderboard grid, like cells of a spreadsheet.
  function setupGrid() {
    document.querySelectorAll("table.grid").forEach(function (table) {
      table.addEventListener("keydown", function (e) {
        var moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
        var move = moves[e.key];
        var cell = e.target.closest("td");
        if (!move || !cell) return;
        var row = cell.parentElement, rows = Array.prototype.slice.call(table.tBodies[0].rows);
        var r = rows.indexOf(row) + move[0], c = cell.cellIndex + move[1];
        if (r < 0 || r >= rows.length || c < 1 || c >= rows[r].cells.length) return;
        var link = rows[r].cells[c].querySelector("a");
        if (link) { e.preventDefault(); link.focus(); }
      });
    });
  }

  function cellValue(row, index) {
    var cell = row.cells[index];
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent.trim();
    var num = parseFloat(raw);
    return raw !== "" && !isNaN(num) && /^-?[\d.eE+-]+$/.test(raw) ? num : raw.toLowerCase();
  }

  function setupSortable() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
      headers.forEach(function (th, index) {
        var button = th.querySelector("button");
        if (!button) return;
        button.addEventListener("click", function () {
          var ascending = th.getAttribute("aria-sort") !== "ascending";
          headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (a, b) {
            var x = cellValue(a, index), y = cellValue(b, index);
            if (typeof x !== typeof y) { x = String(x); y = String(y); }
            return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
          });
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
  }

  function setupFilters() {
    document.querySelectorAll("[data-filter-table]").forEach(function (form) {
      var table = document.getElementById(form.getAttribute("data-filter-table"));
      var count = form.querySelector("[data-count]");
      function apply() {
        var text = (form.querySelector('input[type="search"]') || { value: "" }).value.toLowerCase();
        var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-column]"));
        var shown = 0;
        Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
          var ok = !text || row.textContent.toLowerCase().indexOf(text) !== -1;
          selects.forEach(function (s) {
            if (s.value && row.getAttribute("data-" + s.getAttribute("data-column")) !== s.value) ok = false;
          });
          row.hidden = !ok;
          if (ok) shown += 1;
        });
        if (count) count.textContent = shown;
      }
      form.addEventListener("input", apply);
      form.addEventListener("submit", function (e) { e.preventDefault(); });
      apply();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupTabs(); setupGrid(); setupSortable(); setupFilters(); renderCharts();
  });
})();
