// One run's page: the paged live feed, the header and the speedup chart.
//
// The feed holds a contiguous window of steps (under the current filter), keyed by seq. The socket only says
// "seq N was stored" (runs/events.py: a `step.stored` names the first seq of the steps stored together, and its
// kind); the page then asks the server for the steps after the highest seq it holds. After a
// reconnect it asks the same question, so nothing is missed and, being keyed by seq, nothing is shown twice.
// A run of 12,000 steps opens with its last page only; older pages load on demand (scrolling to the top).
// The window holds at most MAX_HELD steps: following live, the oldest leave the page (they load again on
// scrolling up); reading back, the newest leave it (the "newer" button brings them back). A tab left open
// on a run of a week's steps stays small.
"use strict";
(function () {
  const page = document.getElementById("run-page");
  const runId = Number(page.dataset.run);
  const list = document.getElementById("feed-list");
  const feed = document.getElementById("feed");
  const olderButton = document.getElementById("feed-older");
  const newerButton = document.getElementById("feed-newer");
  const feedState = document.getElementById("feed-state");
  const PAGE = 200;
  let maxHeld = Number(page.dataset.maxHeld) || 2000;

  const held = new Map();  // seq -> <li>
  let lo = null, hi = null, atTail = false, loading = false, generation = 0;

  function filterParams() {
    const params = new URLSearchParams();
    document.querySelectorAll("#feed-filters input[name=kind]:checked").forEach((box) => params.append("kind", box.value));
    const q = document.getElementById("feed-search").value.trim();
    if (q) params.set("q", q);
    return params;
  }

  async function fetchSteps(extra) {
    const params = filterParams();
    Object.entries(extra).forEach(([k, v]) => params.set(k, v));
    params.set("limit", PAGE);
    const response = await fetch(page.dataset.stepsUrl + "?" + params, {credentials: "same-origin"});
    if (!response.ok) throw new Error("steps: " + response.status);
    return response.json();
  }

  function render(step) {
    const li = document.createElement("li");
    li.id = "step-" + step.seq;
    li.className = "step kind-" + step.kind;
    li.dataset.seq = step.seq;
    const line = document.createElement("div");
    line.className = "step-line";
    const link = document.createElement("a");
    link.href = "#step-" + step.seq;
    link.className = "permalink";
    link.textContent = "#" + step.seq;
    link.title = "permalink to this step";
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = step.kind.replace("_", " ");
    const summary = document.createElement("span");
    summary.className = "summary";
    summary.textContent = step.summary;
    line.append(link, kind, summary);
    // Operators fork a run at any step (docs/fork.md); the fork page takes the decision at a question.
    let fork = null;
    if (page.dataset.forkUrl) {
      fork = document.createElement("a");
      fork.className = "fork-here";
      fork.href = page.dataset.forkUrl + "?seq=" + step.seq;
      fork.textContent = "Fork here";
      fork.title = "start a new run that continues this one from this step";
      line.append(fork);
    }
    line.addEventListener("click", (e) => { if (e.target !== link && e.target !== fork) toggle(li, step); });
    li.append(line);
    if (step.note) li.append(renderNote(step.note));
    return li;
  }

  // An evaluation's note (the question asked then, in an imported harness trace) under its line, with each bank
  // question it names by key: the key and the bank's text (the server's step_notes). Text only, never markup.
  function renderNote(note) {
    const box = document.createElement("div");
    box.className = "step-note";
    const text = document.createElement("p");
    text.textContent = "Note: " + note.text;
    box.append(text);
    for (const question of note.questions) {
      const line = document.createElement("p");
      line.className = "step-bank-question";
      const key = document.createElement("code");
      key.textContent = question.key;
      line.append("Bank question ", key, ": " + question.text);
      box.append(line);
    }
    return box;
  }

  async function toggle(li, step) {
    const open = li.querySelector("pre");
    if (open) { open.remove(); return; }
    let payload = step.payload;
    if (payload === null) {
      const response = await fetch(page.dataset.stepsUrl + step.seq + "/", {credentials: "same-origin"});
      payload = (await response.json()).payload;
    }
    const pre = document.createElement("pre");
    pre.className = "step-detail";
    pre.textContent = JSON.stringify(payload, null, 1);
    li.append(pre);
  }

  // Insert in seq order; a seq already held is skipped (a late or repeated notice changes nothing).
  function insert(steps) {
    let added = 0;
    for (const step of steps) {
      if (held.has(step.seq)) continue;
      const li = render(step);
      let next = null;
      if (hi !== null && step.seq < hi) {
        for (const [seq, el] of held) if (seq > step.seq && (next === null || seq < Number(next.dataset.seq))) next = el;
      }
      list.insertBefore(li, next);
      held.set(step.seq, li);
      lo = lo === null ? step.seq : Math.min(lo, step.seq);
      hi = hi === null ? step.seq : Math.max(hi, step.seq);
      added++;
    }
    return added;
  }

  // Drop steps beyond maxHeld from one end of the window: "old" (lowest seqs) or "new" (highest).
  function trim(end) {
    if (held.size <= maxHeld) return;
    const seqs = [...held.keys()].sort((a, b) => a - b);
    const drop = end === "old" ? seqs.slice(0, seqs.length - maxHeld) : seqs.slice(maxHeld);
    for (const seq of drop) { held.get(seq).remove(); held.delete(seq); }
    const kept = end === "old" ? seqs.slice(seqs.length - maxHeld) : seqs.slice(0, maxHeld);
    lo = kept[0]; hi = kept[kept.length - 1];
    if (end === "old") olderButton.dataset.more = "1";
    else atTail = false;
  }

  function nearBottom() { return feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40; }

  function showState() {
    olderButton.hidden = !olderButton.dataset.more;
    newerButton.hidden = atTail;
    // "following live" only where new steps can come: not on a finished or an imported run (data-live).
    feedState.textContent = held.size + " steps shown" + (atTail && page.dataset.live ? ", following live" : "");
  }

  // A step stored while the first page of steps is on its way may be after what that fetch read: it is noted
  // (storedDuringReset) and fetched once the page is in, instead of being left behind a "newer" button.
  let resetting = false, storedDuringReset = false;
  async function reset() {
    const mine = ++generation;
    held.clear(); list.textContent = ""; lo = hi = null;
    resetting = true; storedDuringReset = false;
    const anchor = location.hash.match(/^#step-(\d+)$/);
    let data;
    try {
      data = await fetchSteps(anchor ? {around: anchor[1]} : {});
    } finally {
      if (mine === generation) resetting = false;  // a failed fetch leaves the feed following messages again
    }
    if (mine !== generation) return;
    insert(data.steps);
    olderButton.dataset.more = data.has_older ? "1" : "";
    atTail = !data.has_newer;
    showState();
    if (anchor && held.has(Number(anchor[1]))) {
      const target = held.get(Number(anchor[1]));
      target.classList.add("highlight");
      target.scrollIntoView({block: "center"});
    } else {
      feed.scrollTop = feed.scrollHeight;
    }
    if (storedDuringReset && atTail) await loadNewer();
  }

  async function loadOlder() {
    if (loading || lo === null || !olderButton.dataset.more) return;
    loading = true;
    const mine = generation;
    try {
      const data = await fetchSteps({before: lo});
      if (mine !== generation) return;
      const before = feed.scrollHeight;
      insert(data.steps);
      feed.scrollTop += feed.scrollHeight - before;  // keep the reader's place
      olderButton.dataset.more = data.has_older ? "1" : "";
      trim("new");
      showState();
    } finally { loading = false; }
  }

  // Following live, a burst of more than a page is fetched page after page; the "newer" button takes one page.
  let catchingUp = false, again = false;
  async function loadNewer({follow = atTail} = {}) {
    if (catchingUp) { again = true; return; }
    catchingUp = true;
    const mine = generation;
    try {
      do {
        again = false;
        const stick = nearBottom();
        const data = await fetchSteps(hi === null ? {} : {after: hi});
        if (mine !== generation) return;
        insert(data.steps);
        atTail = !data.has_newer;
        if (stick) {                       // the reader is at the bottom: older steps may leave the page
          trim("old");
          feed.scrollTop = feed.scrollHeight;
        }
        if (follow && data.has_newer) again = true;
      } while (again);
      showState();
    } finally { catchingUp = false; }
  }

  // A step stored below the highest one held (a gap filling after a worker restart) is fetched on its own.
  async function fillGap(seq) {
    const data = await fetchSteps({after: seq - 1});
    insert(data.steps.filter((s) => s.seq <= hi));
  }

  // ---------------------------------------------------------------- header and chart

  const refreshSummary = KSeek.debounce(async () => {
    const response = await fetch(page.dataset.summaryUrl, {credentials: "same-origin"});
    if (!response.ok) return;
    const s = await response.json();
    const status = document.getElementById("run-status");
    // Why the run has its status (a budget spent, a model error, a refused event), beside it as on first load.
    status.textContent = s.status_label;
    if (s.status_reason) {
      const reason = document.createElement("span");
      reason.className = "status-reason";
      reason.textContent = " (" + s.status_reason + ")";
      status.append(" ", reason);
    }
    status.className = "status-" + s.status;
    // The queue reason is the server's at page load; once the run leaves the queue it no longer applies.
    if (s.status !== "queued") document.getElementById("run-queue-reason").hidden = true;
    showControls(s.status);
    dropStaleMessages(s.status);
    // The run's best is a verified figure (a full evaluation measured here), with its interval and label: the
    // server writes the text (runs.run_pages.selectors.run_best_text), as it does on first load.
    document.getElementById("run-best").textContent = s.best_text;
    // Each baseline's best with its interval, as the server writes it (Run.best_texts).
    document.getElementById("run-baselines").textContent = s.best_texts.length
      ? s.best_texts.map(([name, text]) => name + " " + text).join(" · ") : "—";
    document.getElementById("run-steps").textContent = s.step_count;
    // An imported trace that records no usage: its tokens and cost stay "unknown", as the server wrote them.
    if (!s.usage_unknown) {
      document.getElementById("run-tokens").textContent = s.tokens_in + " / " + s.tokens_out;
      // "at least $…" where a model's price was unknown: the server writes it (Run.cost_text).
      const cost = document.getElementById("run-cost");
      cost.textContent = s.cost_text;
      cost.classList.toggle("cost-incomplete", !s.cost_complete);
    }
    if (!s.imported) document.getElementById("run-worker").textContent = s.worker || "no worker yet";
    if (["succeeded", "failed", "stopped"].includes(s.status)) { delete page.dataset.live; showState(); }
    document.getElementById("run-worker-gpu").textContent = s.worker && s.worker_gpu ? " · " + s.worker_gpu : "";
    const offline = document.getElementById("run-worker-offline");
    offline.hidden = s.worker_offline_since === null;
    // The ISO time in UTC, as the server renders times: "2026-11-30 20:15:03".
    const since = s.worker_offline_since ? " since " + s.worker_offline_since.slice(0, 19).replace("T", " ") : "";
    offline.textContent = "offline" + since + (s.worker_revoked
      ? ": its token was revoked; the run waits until an operator stops it or the host returns with a new token"
      : ": the run waits for it");
    page.dataset.started = s.started_at || "";
    page.dataset.finished = s.finished_at || "";
    tickElapsed();
  }, 300);

  // The operator's controls the status allows: none on a finished run, pause while it runs, resume while paused.
  // A finished run takes no message either: nobody would read it.
  function showControls(status) {
    const finished = ["succeeded", "failed", "stopped"].includes(status);
    const messageForm = document.getElementById("message-form");
    if (messageForm && finished) messageForm.remove();
    const controls = document.getElementById("run-controls");
    if (!controls) return;
    controls.hidden = finished;
    document.getElementById("btn-pause").hidden = !["running", "waiting_review"].includes(status);
    document.getElementById("btn-resume").hidden = status !== "paused";
  }

  // A banner that reports the run's status ("Demo run 2 is queued", runs/flash.py) goes once the status it
  // reports no longer holds.
  function dropStaleMessages(status) {
    document.querySelectorAll(".messages li[data-tags]").forEach((item) => {
      const reported = item.dataset.tags.split(" ").find((tag) => tag.startsWith("run-status-"));
      if (reported && reported !== "run-status-" + status) item.remove();
    });
    const list = document.querySelector(".messages");
    if (list && !list.children.length) list.remove();
  }

  function tickElapsed() {
    const el = document.getElementById("run-elapsed");
    if (!page.dataset.started) { el.textContent = "—"; return; }
    const end = page.dataset.finished ? new Date(page.dataset.finished) : new Date();
    const s = Math.max(0, Math.round((end - new Date(page.dataset.started)) / 1000));
    el.textContent = Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m " + (s % 60) + "s";
  }
  setInterval(tickElapsed, 1000);
  tickElapsed();

  const refreshChart = KSeek.debounce(async () => {
    const response = await fetch(page.dataset.chartUrl, {credentials: "same-origin"});
    if (!response.ok) return;
    const data = await response.json();
    drawSpeedupChart(document.getElementById("speedup-chart"), data);
    drawEvaluations(data.points);
    // A quick-set best above the verified one is shown labelled "quick", never as the run's best.
    const quick = document.getElementById("run-best-quick");
    quick.hidden = data.unverified.quick_text === null;
    quick.textContent = data.unverified.quick_text || "";  // the server's text: interval and label
  }, 300);

  // The Evaluations table as the page renders it (the newest EVALUATIONS_SHOWN, newest first), from the chart's
  // points (the server writes each cell's text: status label, speedup, kernel hash).
  const EVALUATIONS_SHOWN = Number(document.getElementById("run-evaluations").dataset.shown);
  function drawEvaluations(points) {
    const body = document.querySelector("#run-evaluations tbody");
    if (!body || !points.length) return;
    const link = (href, text) => { const a = document.createElement("a"); a.href = href; a.textContent = text; return a; };
    body.replaceChildren(...points.slice(-EVALUATIONS_SHOWN).reverse().map((p) => {
      const tr = document.createElement("tr");
      tr.dataset.evaluation = String(p.evaluation_id);
      const cells = [0, 1, 2, 3, 4, 5].map(() => document.createElement("td"));
      if (p.x !== null) cells[0].append(link("#step-" + p.x, "#" + p.x));
      cells[1].className = "status-" + p.status;
      cells[1].textContent = p.status_label;
      cells[2].textContent = p.speedup_text;
      cells[3].textContent = p.device;
      cells[4].append(link("/kernels/" + p.kernel_id + "/", p.kernel_short));
      cells[5].append(link("/evaluations/" + p.evaluation_id + "/", "per scenario"));
      tr.append(...cells);
      return tr;
    }));
  }

  // How each point is drawn, by what it may be called (the server's `standing` and `partial`, from
  // gpu_harness.figures): only a verified point is a filled circle; a quick-set figure, a trace's claim and a figure
  // that did not cover everything it names (a subset's claim, best_library without every library) each have their
  // own marker and legend entry, so none reads as a measured full figure.
  const POINT_STYLES = {
    "verified": {name: "verified (full set, measured here)", symbol: "circle"},
    "verified-partial": {name: "full set, not every library timed", symbol: "triangle-up"},
    "quick": {name: "quick set (not verified)", symbol: "circle-open"},
    "quick-partial": {name: "quick set, not every library timed", symbol: "triangle-up-open"},
    "imported": {name: "imported (the trace's claim)", symbol: "diamond"},
    "imported-partial": {name: "imported claim, on a subset or fewer libraries", symbol: "diamond-open"},
  };

  function pointTraces(ok) {
    const groups = new Map();
    for (const p of ok) {
      const key = p.standing + (p.partial ? "-partial" : "");
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(p);
    }
    return [...groups].map(([key, group]) => {
      const style = POINT_STYLES[key] || {name: key, symbol: "circle"};
      return {
        name: style.name, meta: key, x: group.map((p) => p.x), y: group.map((p) => p.speedup),
        mode: "markers", type: "scatter", marker: {symbol: style.symbol, size: 9},
        // The interval as an error bar (none where the verdict has none): a point inside the noise shows it.
        error_y: {type: "data", symmetric: false, visible: true,
                  array: group.map((p) => (p.interval ? p.interval[1] - p.speedup : 0)),
                  arrayminus: group.map((p) => (p.interval ? p.speedup - p.interval[0] : 0))},
        customdata: group.map((p) => p.evaluation_id),
        // the machine too: one run's points may come from two cards (a lab's H100 screens beside its H200 ones)
        text: group.map((p) => KSeek.plotlyText(
          p.speedup_text + (p.partial ? " · " + p.partial : "") + (p.device !== "—" ? " · on " + p.device : ""))),
        hovertemplate: "step %{x}: %{text}<extra></extra>",
      };
    });
  }

  function drawSpeedupChart(el, data) {
    const points = data.points.filter((p) => p.x !== null);
    document.getElementById("speedup-chart-empty").hidden = points.length > 0;
    const ok = points.filter((p) => p.status === "correct" && p.speedup !== null);
    // Correct, but with no figure over the run's baseline in its verdict (an evaluation that did not time that
    // baseline, as a lab's older trace may hold): neither a speed-up nor a failure, so drawn apart from both.
    const unmeasured = points.filter((p) => p.status === "correct" && p.speedup === null);
    const bad = points.filter((p) => p.status !== "correct");
    const top = Math.max(data.goal, ...ok.map((p) => (p.interval ? p.interval[1] : p.speedup)), 1) * 1.1;
    const questions = data.questions.filter((q) => q.x !== null);
    const qx = [], qy = [], qtext = [];
    // A question's text is shown as typed, never as markup (KSeek.plotlyText): it may come from a trace.
    questions.forEach((q) => {
      const shown = KSeek.plotlyText(q.text);
      qx.push(q.x, q.x, null); qy.push(0, top, null); qtext.push(shown, shown, null);
    });
    const traces = [
      ...pointTraces(ok),
      {name: "not correct", meta: "not-correct", x: bad.map((p) => p.x), y: bad.map(() => 0), mode: "markers", type: "scatter",
       marker: {symbol: "x", color: "#c0362c", size: 9}, text: bad.map((p) => KSeek.plotlyText(p.status)),
       hovertemplate: "step %{x}: %{text}<extra></extra>"},
      // The best's own words (the server's: its interval, "no difference" inside the noise), never the bare point.
      {name: "best so far (verified)", meta: "best", x: data.best.map((b) => b.x), y: data.best.map((b) => b.best), mode: "lines", type: "scatter",
       line: {shape: "hv", color: "#18794e"}, text: data.best.map((b) => KSeek.plotlyText(b.text)),
       hovertemplate: "step %{x}: best so far %{text}<extra></extra>"},
      {name: "question", meta: "question", x: qx, y: qy, mode: "lines", type: "scatter", text: qtext, hoverinfo: "text",
       line: {color: "#b26b00", dash: "dot"}},
      // last, so that the traces before it keep their places
      {name: KSeek.plotlyText("correct, no figure over " + data.baseline), meta: "no-figure",
       x: unmeasured.map((p) => p.x), y: unmeasured.map(() => 0), mode: "markers", type: "scatter",
       marker: {symbol: "circle-open", color: "#6b7280", size: 9}, customdata: unmeasured.map((p) => p.evaluation_id),
       text: unmeasured.map((p) => KSeek.plotlyText(
         "correct; its verdict has no speed-up over " + data.baseline + (p.device !== "—" ? " · on " + p.device : ""))),
       hovertemplate: "step %{x}: %{text}<extra></extra>"},
    ];
    const layout = {
      margin: {t: 10, r: 10, b: 40, l: 50}, height: 320, xaxis: {title: {text: "step"}},
      // The scope actually timed (the server's axis_label: "best of eager only; not timed: ..." where it differs).
      yaxis: {title: {text: KSeek.plotlyText(data.axis_label)}, rangemode: "tozero"},
      shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: data.goal, y1: data.goal, line: {color: "#3557c9", dash: "dash"}}],
      legend: {orientation: "h"},
    };
    Plotly.react(el, traces, layout, {displaylogo: false, responsive: true});
    el.dataset.points = String(points.length);
    el.dataset.questions = String(questions.length);
    if (!el.dataset.clickBound) {
      el.dataset.clickBound = "1";
      el.on("plotly_click", (event) => {
        const id = event.points[0] && event.points[0].customdata;
        if (id) location.href = "/evaluations/" + id + "/";
      });
    }
  }

  // ------------------------------------------------------------------------------- wiring

  olderButton.addEventListener("click", loadOlder);
  newerButton.addEventListener("click", () => loadNewer({follow: false}));
  feed.addEventListener("scroll", () => { if (feed.scrollTop < 60) loadOlder(); });
  document.querySelectorAll("#feed-filters input[name=kind]").forEach((box) => box.addEventListener("change", reset));
  document.getElementById("feed-search").addEventListener("input", KSeek.debounce(reset, 300));
  window.addEventListener("hashchange", reset);

  const messageForm = document.getElementById("message-form");
  if (messageForm) {
    messageForm.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = messageForm.querySelector("textarea").value;
      const result = await KSeek.postForm(messageForm.action, {text});
      document.getElementById("message-state").textContent = result.message || result.error || "";
      if (result.ok) messageForm.querySelector("textarea").value = "";
    });
  }

  let opened = false;
  KSeek.liveSocket("/ws/runs/" + runId + "/", {
    onOpen: async () => {
      if (!opened) { opened = true; await reset(); } else if (atTail) { await loadNewer(); }
      refreshSummary(); refreshChart();
    },
    onMessage: (message) => {
      if (message.type === "step.stored") {
        if (resetting) { storedDuringReset = true; refreshSummary(); return; }
        if (atTail && (hi === null || message.seq > hi)) loadNewer();
        else if (hi !== null && message.seq < hi && message.seq > lo && !held.has(message.seq)) fillGap(message.seq);
        else if (!atTail) { newerButton.hidden = false; }
        refreshSummary();
        if (["evaluation", "question_proposed", "question_decided"].includes(message.kind)) refreshChart();
      } else if (message.type === "run.changed" || message.type === "question.changed") {
        refreshSummary(); refreshChart();
      }
    },
  });
  window.KSeekRun = {held: () => held.size, range: () => [lo, hi], limit: (n) => { maxHeld = n; }};
})();
