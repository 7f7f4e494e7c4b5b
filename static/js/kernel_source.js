// A long kernel source: its page shows the first lines; the button puts the whole source in their place, as the
// server highlighted it (runs/kernel_pages/views.py, kernel_source), fetched only when someone asks for it.
"use strict";
(function () {
  const button = document.getElementById("source-load");
  const body = document.getElementById("source-body");
  const extent = document.getElementById("source-extent");
  if (!button || !body) return;
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = "Loading the whole source…";
    try {
      const answer = await fetch(button.dataset.url, { credentials: "same-origin" });
      if (!answer.ok) throw new Error(`the server answered ${answer.status}`);
      body.innerHTML = await answer.text(); // the server's HTML: the source escaped, in highlighting spans
      if (extent) extent.textContent = extent.dataset.whole;
      button.hidden = true;
    } catch (error) {
      button.disabled = false;
      button.textContent = `Show the whole source (it failed: ${error.message}; try again)`;
    }
  });
})();
