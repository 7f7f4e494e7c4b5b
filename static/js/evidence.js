// The evidence grid: the baseline select recolours every cell from the texts and tones the server worked out
// for each baseline (runs/kernel_pages/selectors_evidence.py), and pointing at a cell shows its scenario's details below.
"use strict";
(function () {
  const data = document.getElementById("evidence-cells");
  const grid = document.getElementById("evidence-grid");
  if (!data || !grid) return;
  const cells = JSON.parse(data.textContent);
  const select = document.getElementById("evidence-baseline");
  const hover = document.getElementById("evidence-hover");
  function show(baseline) {
    grid.querySelectorAll("td[data-scenario]").forEach((td) => {
      const [text, tone] = (cells[td.dataset.scenario] || {})[baseline] || ["—", "none"];
      td.textContent = text;
      td.className = td.className.replace(/\btone-[\w-]+/, "tone-" + tone);
    });
    document.querySelectorAll("#evidence-spread tr[data-baseline]").forEach((tr) => {
      tr.classList.toggle("chosen", tr.dataset.baseline === baseline);
    });
    grid.dataset.baseline = baseline;
  }
  if (select) {
    select.addEventListener("change", () => show(select.value));
    show(select.value);
  }
  function detail(event) {
    const td = event.target.closest("td[data-scenario]");
    if (td && hover) hover.textContent = td.title;
  }
  grid.addEventListener("mouseover", detail);
  grid.addEventListener("focusin", detail);
})();
