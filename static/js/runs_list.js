// The runs list follows the all-runs socket: when a run changes or a step lands, its rows are fetched again.
"use strict";
(function () {
  const rows = document.getElementById("runs-rows");
  const refresh = KSeek.debounce(async () => {
    const response = await fetch(rows.dataset.url + location.search, {credentials: "same-origin"});
    if (!response.ok) return;
    // The rows are replaced: keep the runs picked for comparing picked.
    const picked = [...rows.querySelectorAll("input[name=runs]:checked")].map((box) => box.value);
    rows.innerHTML = await response.text();
    rows.querySelectorAll("input[name=runs]").forEach((box) => { box.checked = picked.includes(box.value); });
  }, 300);
  setInterval(refresh, 10000);  // step counts: steps are announced to each run's own group only
  KSeek.onRunsEvent((message) => {
    if (message.type === "run.changed" || message.type === "question.changed") refresh();
  });
})();
