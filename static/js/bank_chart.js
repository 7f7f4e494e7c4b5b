// Question effectiveness: mean gain after questions, per category and per asked question.
"use strict";
(function () {
  const d = JSON.parse(document.getElementById("bank-data").textContent);
  const el = document.getElementById("bank-chart");
  const text = (values) => values.map(KSeek.plotlyText);  // shown as typed, never as markup (kseek.js)
  // A mean gain's interval as an error bar (none where its noise is unknown): a bar inside the noise shows it.
  const errors = (gains, intervals) => ({
    type: "data", symmetric: false, visible: true,
    array: gains.map((g, i) => (g !== null && intervals[i][1] !== null ? intervals[i][1] - g : 0)),
    arrayminus: gains.map((g, i) => (g !== null && intervals[i][0] !== null ? g - intervals[i][0] : 0)),
  });
  Plotly.newPlot(el, [
    {type: "bar", name: "per category", x: text(d.categories), y: d.category_gain,
     error_y: errors(d.category_gain, d.category_interval),
     text: d.category_gain_text.map((t, i) => KSeek.plotlyText(t + ", " + d.category_asked[i] + " asked")),
     textposition: "none", hovertemplate: "%{x}: %{text}<extra></extra>"},
    {type: "bar", name: "per question", x: text(d.questions), y: d.question_gain, xaxis: "x2", yaxis: "y2",
     error_y: errors(d.question_gain, d.question_interval),
     text: d.question_gain_text.map((t, i) => KSeek.plotlyText(t) + "<br>" + KSeek.plotlyText(d.question_text[i])),
     textposition: "none", hovertemplate: "%{x}: %{text}<extra></extra>"},
  ], {
    grid: {rows: 1, columns: 2, pattern: "independent"}, height: 340, margin: {t: 10, r: 10, b: 110, l: 50},
    yaxis: {title: {text: "mean gain (×)"}}, showlegend: false,
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {color: "#667085", dash: "dot"}}],
  }, {displaylogo: false, responsive: true});
})();
