// Per-scenario speedups of one evaluation against each baseline, grouped by the scenario axes; a failing
// scenario is a red band across the chart and a red ✗ above its bar, so it cannot be missed.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("scenario-data").textContent);
  const el = document.getElementById("scenario-chart");
  if (!data.ids.length) return;
  const x = [data.groups, data.labels];
  const traces = Object.entries(data.speedups).map(([baseline, values]) => ({
    type: "bar", name: "vs " + baseline, x, y: values.map((v) => v === null ? 0 : v),
    text: values.map((v, i) => (data.correct[i] ? "" : "FAIL ") + (v === null ? "n/a" : v.toFixed(2) + "×")),
    hovertemplate: "%{x}<br>%{text}<extra>" + baseline + "</extra>",
  }));
  const failing = data.correct.map((ok, i) => ok ? null : i).filter((i) => i !== null);
  traces.push({
    type: "scatter", mode: "markers+text", name: "incorrect", x: [failing.map((i) => data.groups[i]), failing.map((i) => data.labels[i])],
    y: failing.map(() => 0), text: failing.map(() => "✗ FAIL"), textposition: "top center",
    marker: {symbol: "x", size: 14, color: "#c0362c"}, textfont: {color: "#c0362c", size: 13},
    hovertext: failing.map((i) => data.ids[i] + ": " + (data.reasons[i] || "incorrect")), hoverinfo: "text",
  });
  const shapes = failing.map((i) => ({type: "rect", xref: "x", yref: "paper", x0: i - 0.5, x1: i + 0.5, y0: 0, y1: 1,
                                       fillcolor: "rgba(192,54,44,0.15)", line: {width: 0}}));
  Plotly.newPlot(el, traces, {
    barmode: "group", height: 380, margin: {t: 10, r: 10, b: 90, l: 50}, shapes,
    yaxis: {title: {text: "speedup"}}, xaxis: {type: "multicategory"},
    legend: {orientation: "h"},
  }, {displaylogo: false, responsive: true});
  el.dataset.failing = String(failing.length);
})();
