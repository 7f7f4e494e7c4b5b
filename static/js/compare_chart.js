// The compare page's chart: each run's best verified speedup after each evaluation, with its questions marked.
"use strict";
(function () {
  const series = JSON.parse(document.getElementById("compare-data").textContent);
  const el = document.getElementById("compare-chart");
  const colours = ["#3557c9", "#18794e", "#b26b00", "#c0362c", "#7a3fb0", "#0f7c8c", "#8a5a00", "#555f6d"];
  // Every string from a run (its label, its baseline's name, a question's text and decision) reaches Plotly
  // through KSeek.plotlyText, and as data (customdata), never inside a hovertemplate, where %{...} would be read.
  const text = KSeek.plotlyText;
  const traces = [];
  series.forEach((run, i) => {
    const colour = colours[i % colours.length];
    traces.push({name: text(run.label), legendgroup: "run-" + run.run_id, meta: "run", type: "scatter",
      mode: "lines+markers", x: run.evaluations, y: run.best, line: {shape: "hv", color: colour},
      // Each point's best as the server writes it (its interval, "no difference" inside the noise), never the
      // bare point: the summary table beside the chart says "no difference" where this would say 1.060×.
      customdata: run.evaluations.map((_, j) => [text(run.baseline), text(run.best_text[j] || "")]),
      hovertemplate: "evaluation %{x}: %{customdata[1]} over %{customdata[0]}<extra>#" + run.run_id + "</extra>"});
    const qs = run.questions;
    // A question asked before the run had a verified best has no speedup to stand at: it is drawn open, on the
    // axis, and its hover says so, so it does not read as a 0x measurement.
    const unmeasured = (q) => q.best === null;
    traces.push({name: "questions of #" + run.run_id, legendgroup: "run-" + run.run_id, meta: "questions",
      type: "scatter", mode: "markers", showlegend: false,
      marker: {symbol: qs.map((q) => (unmeasured(q) ? "diamond-open" : "diamond")), size: 10, color: colour},
      x: qs.map((q) => q.evaluation), y: qs.map((q) => (unmeasured(q) ? 0 : q.best)),
      customdata: qs.map((q) => [text(q.text), text(q.decision_text),
        unmeasured(q) ? "asked before any verified best" : "best verified then: " + text(q.best_text)]),
      hovertemplate: "%{customdata[0]}<br>%{customdata[1]}<br>%{customdata[2]}<extra>#" + run.run_id + "</extra>"});
  });
  Plotly.newPlot(el, traces, {
    margin: {t: 10, r: 10, b: 40, l: 50}, height: 360, legend: {orientation: "h"},
    xaxis: {title: {text: "evaluation"}, rangemode: "tozero"},
    yaxis: {title: {text: "best verified speedup (×)"}, rangemode: "tozero"},
  }, {displaylogo: false, responsive: true});
  el.dataset.runs = String(series.length);
})();
