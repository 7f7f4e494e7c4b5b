// The runs list follows the all-runs socket: when a run changes or a step lands, its rows are fetched again.
"use strict";
(function () {
  const rows = document.getElementById("runs-rows");
  const refresh = KSeek.debounce(async () => {
    const response = await fetch(rows.dataset.url + location.search, {credentials: "same-origin"});
    if (response.ok) rows.innerHTML = await response.text();
  }, 300);
  setInterval(refresh, 10000);  // step counts: steps are announced to each run's own group only
  KSeek.onRunsEvent((message) => {
    if (message.type === "run.changed" || message.type === "question.changed") refresh();
  });
})();
