/* Draws the results pages' charts with Chart.js (static/vendor, pinned by make deps) from
 * the JSON spec that perf/charts.py writes into a json_script element next to each
 * <figure data-chart="…">. The table beside each chart holds the same figures: without
 * this script (or Chart.js) the page still reads. */
(function () {
  "use strict";
  // Canvases take room only where this script runs (specadmin.css): without it the
  // tables stand alone instead of below an empty box.
  document.documentElement.classList.add("charts-on");

  function number(v) {
    if (v === null || v === undefined) return "—";
    var a = Math.abs(v);
    if (Number.isInteger(v)) return v.toLocaleString("en");
    if (a >= 100) return Math.round(v).toLocaleString("en");
    if (a >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }

  function dataset(s, kind) {
    var pareto = !!s.pareto, reference = !!s.reference;
    var set = {
      label: s.label,
      data: s.points.map(function (p) { return { x: p.x, y: p.y, note: p.note || "" }; }),
      borderColor: s.color,
      backgroundColor: pareto ? "rgba(0,0,0,0)" : s.color,
      pointBackgroundColor: pareto ? "rgba(0,0,0,0)" : (s.point_colors || s.color),
      pointBorderColor: s.point_colors || s.color,
      pointStyle: pareto ? "rectRot" : "circle",
      pointRadius: s.no_points ? 0 : (pareto ? 9 : 4),
      pointHoverRadius: s.no_points ? 0 : (pareto ? 11 : 6),
      pointBorderWidth: pareto ? 2 : 1,
      borderWidth: reference ? 2.5 : (pareto ? 1.5 : 2),
      borderDash: reference ? [7, 4] : (pareto ? [2, 3] : []),
      showLine: s.line !== false,
      spanGaps: true,
      tension: 0,
      order: pareto ? 0 : (reference ? 1 : 2)
    };
    if (kind === "bar") {
      set.borderWidth = 1;
      set.borderDash = [];
    }
    return set;
  }

  function axis(a) {
    var scale = {
      type: a.type || "linear",
      title: { display: true, text: a.title },
      ticks: { autoSkip: true, autoSkipPadding: 14, maxRotation: 0, includeBounds: false },
      grid: { color: "#e6e9ee" }
    };
    if (a.labels) scale.labels = a.labels;
    if (a.begin_at_zero) scale.beginAtZero = true;
    if (a.ticks && a.ticks.length) {
      var wanted = a.ticks.slice();
      scale.afterBuildTicks = function (s) {
        s.ticks = wanted.map(function (v) { return { value: v }; });
      };
      scale.ticks.callback = function (v) { return String(v); };
      scale.min = Math.min.apply(null, wanted) * (scale.type === "logarithmic" ? 0.8 : 1);
      scale.max = Math.max.apply(null, wanted) * (scale.type === "logarithmic" ? 1.25 : 1.05);
    } else if (scale.type !== "category") {
      scale.ticks.callback = function (v) { return number(v); };
    }
    return scale;
  }

  function tooltipLabel(spec) {
    return function (ctx) {
      var raw = ctx.raw || {};
      var y = number(raw.y) + " " + (spec.y.unit || "");
      var x = spec.kind === "scatter" ? number(raw.x) + " " + (spec.x.unit || "") : raw.x;
      var text = ctx.dataset.label + ": " + y + " at " + x;
      return raw.note ? [text, raw.note] : text;
    };
  }

  function draw(figure) {
    var source = document.getElementById(figure.getAttribute("data-chart"));
    var canvas = figure.querySelector("canvas");
    if (!source || !canvas || typeof window.Chart === "undefined") return;
    var spec = JSON.parse(source.textContent);
    var kind = spec.kind === "bar" ? "bar" : (spec.kind === "line" ? "line" : "scatter");
    var config = {
      type: kind,
      data: {
        labels: spec.x.labels || undefined,
        datasets: spec.series.map(function (s) { return dataset(s, kind); })
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        parsing: kind === "bar" ? { xAxisKey: "x", yAxisKey: "y" } : undefined,
        interaction: { mode: "nearest", intersect: kind !== "bar" },
        plugins: {
          legend: { position: "bottom", labels: { usePointStyle: true, boxWidth: 12, padding: 12 } },
          tooltip: { callbacks: { label: tooltipLabel(spec) } }
        },
        scales: { x: axis(spec.x), y: axis(spec.y) }
      }
    };
    figure.chart = new window.Chart(canvas, config);
    figure.classList.add("chart-drawn");
  }

  function drawAll() {
    document.querySelectorAll("figure[data-chart]").forEach(draw);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
