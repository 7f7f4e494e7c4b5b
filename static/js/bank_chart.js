// Question effectiveness: mean gain after questions, per category and per asked question.
"use strict";
(function () {
  const d = JSON.parse(document.getElementById("bank-data").textContent);
  const el = document.getElementById("bank-chart");
  const text = (values) => values.map(KSeek.plotlyText);  // shown as typed, never as markup (kseek.js)
  Plotly.newPlot(el, [
    {type: "bar", name: "per category", x: text(d.categories), y: d.category_gain,
     text: d.category_asked.map((n) => n + " asked"), hovertemplate: "%{x}: %{y:.3f}× (%{text})<extra></extra>"},
    {type: "bar", name: "per question", x: text(d.questions), y: d.question_gain, xaxis: "x2", yaxis: "y2",
     text: text(d.question_text), hovertemplate: "%{x}: %{y:.3f}×<br>%{text}<extra></extra>"},
  ], {
    grid: {rows: 1, columns: 2, pattern: "independent"}, height: 340, margin: {t: 10, r: 10, b: 110, l: 50},
    yaxis: {title: {text: "mean gain (×)"}}, showlegend: false,
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {color: "#667085", dash: "dot"}}],
  }, {displaylogo: false, responsive: true});
})();
