// The review queue's keyboard: j/k move, a approve, e edit, w write your own, v veto, ? help.
// Approve with an open editor whose text differs from the proposal sends that text (as an edit, or as the
// reviewer's own question); Esc cancels an edit and restores the proposal.
// Decisions are POSTed (the server checks the reviewer role); the list is fetched again when questions change.
"use strict";
(function () {
  const root = document.getElementById("review");
  const state = document.getElementById("review-state");
  const help = document.getElementById("review-help");
  const canDecide = root.dataset.canDecide === "1";
  let selectedId = null;

  const items = () => Array.from(root.querySelectorAll(".review-item"));
  const selected = () => items().find((el) => el.dataset.question === selectedId) || null;

  function select(el) {
    items().forEach((item) => item.classList.toggle("selected", item === el));
    selectedId = el ? el.dataset.question : null;
    if (el) { el.focus({preventScroll: true}); el.scrollIntoView({block: "nearest"}); }
  }

  function move(delta) {
    const all = items();
    if (!all.length) return;
    const at = all.indexOf(selected());
    select(all[Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + delta))]);
  }

  // A viewer's items carry no decide form (nor its textarea): the page offers no button they cannot use.
  function editing(el) { const area = el && el.querySelector("textarea"); return !!area && !area.hidden; }

  // The decision an open editor holds: its mode ("edit" or "replace") once its text is not the proposal's, else
  // null. Approve (button or key) sends that instead of a plain approval, so a reviewer's edit is never dropped.
  function pendingEdit(el) {
    if (!editing(el)) return null;
    const area = el.querySelector("textarea");
    const text = area.value.trim();
    return text && text !== area.defaultValue.trim() ? area.dataset.mode || "edit" : null;
  }

  // The Approve button says what it will send: the proposal, or the reviewer's text.
  function labelApprove(el) {
    const button = el && el.querySelector("button[value=approve]");
    if (button) button.textContent = pendingEdit(el) ? "Approve my text (a)" : "Approve (a)";
  }

  function cancelEdit(el) {
    const area = el.querySelector("textarea");
    const changed = !!pendingEdit(el);
    area.value = area.defaultValue;  // Esc drops the edit visibly: a hidden editor never holds unsent text
    area.hidden = true;
    labelApprove(el);
    if (changed) state.textContent = "Edit cancelled: the question is as proposed.";
    el.focus();
  }

  function startEdit(el, replace) {
    if (!canDecide) { state.textContent = "Deciding needs the reviewer role."; return; }
    const area = el.querySelector("textarea");
    area.hidden = false;
    area.dataset.mode = replace ? "replace" : "edit";
    if (replace) area.value = "";
    area.focus();
  }

  async function decide(el, decision) {
    if (!canDecide) { state.textContent = "Deciding needs the reviewer role."; return; }
    if (decision === "approve") decision = pendingEdit(el) || decision;
    const fields = {decision};
    if (decision === "edit" || decision === "replace") fields.text = el.querySelector("textarea").value;
    const all = items();
    const next = all[all.indexOf(el) + 1] || all[all.indexOf(el) - 1] || null;
    const result = await KSeek.postForm(el.dataset.decideUrl, fields);
    if (result.ok) {
      state.textContent = "Question " + result.question_id + ": " + result.status + ".";
      el.remove();
      select(next);
      KSeek.refreshPending();
    } else {
      state.textContent = result.error || "The decision was not stored.";
      if (result.httpStatus === 409) refresh();
    }
  }

  root.addEventListener("input", (e) => {
    if (e.target.tagName === "TEXTAREA") labelApprove(e.target.closest(".review-item"));
  });

  root.addEventListener("click", (e) => {
    const button = e.target.closest("button[name=decision]");
    const el = e.target.closest(".review-item");
    if (el) select(el);
    if (!button) return;
    e.preventDefault();
    const decision = button.value;
    if ((decision === "edit" || decision === "replace") && !editing(el)) startEdit(el, decision === "replace");
    else decide(el, decision === "edit" || decision === "replace" ? el.querySelector("textarea").dataset.mode || decision : decision);
  });

  document.addEventListener("keydown", (e) => {
    const el = selected();
    if (e.target.tagName === "TEXTAREA") {
      if (e.key === "Escape") cancelEdit(e.target.closest(".review-item"));
      else if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && el) { e.preventDefault(); decide(el, e.target.dataset.mode || "edit"); }
      return;
    }
    if (e.target.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j") move(1);
    else if (e.key === "k") move(-1);
    else if (e.key === "?") help.open ? help.close() : help.showModal();
    else if (!el) return;
    else if (e.key === "a") decide(el, "approve");
    else if (e.key === "v") decide(el, "veto");
    else if (e.key === "e") { e.preventDefault(); startEdit(el, false); }
    else if (e.key === "w") { e.preventDefault(); startEdit(el, true); }
    else return;
  });

  const refresh = KSeek.debounce(async () => {
    if (editing(selected())) return;  // never pull the text a reviewer is writing from under them
    const response = await fetch(root.dataset.itemsUrl, {credentials: "same-origin"});
    if (!response.ok) return;
    const keep = selectedId;
    root.innerHTML = await response.text();
    select(items().find((el) => el.dataset.question === keep) || items()[0] || null);
  }, 300);

  // Opt-in browser notifications: after the reviewer allows them, a question proposed while this tab is hidden
  // shows one (clicking it brings the tab back). Nothing is asked until the button is pressed.
  const notifyButton = document.getElementById("notify-button");
  const notifyState = document.getElementById("notify-state");
  function showNotifyState() {
    const granted = Notification.permission === "granted";
    notifyButton.hidden = granted || Notification.permission === "denied";
    notifyState.textContent = granted ? "Notifications on: a new question shows one while this tab is hidden."
      : Notification.permission === "denied" ? "Notifications are blocked for this site in the browser." : "";
  }
  if ("Notification" in window) {
    showNotifyState();
    notifyButton.addEventListener("click", async () => { await Notification.requestPermission(); showNotifyState(); });
  }
  function notifyNewQuestion(message) {
    if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
    const shown = new Notification("KernelSeek: a question waits for review", {
      body: "Run " + message.run_id + " proposed question " + message.question_id + ".",
      tag: "kseek-question-" + message.question_id,
    });
    shown.onclick = () => { window.focus(); shown.close(); };
  }

  // A run that finishes closes its waiting questions: they leave the queue at once, not at the next click.
  const FINISHED = ["succeeded", "failed", "stopped"];
  KSeek.onRunsEvent((message) => {
    if (message.type === "run.changed" && FINISHED.includes(message.status)) { refresh(); return; }
    if (message.type !== "question.changed") return;
    if (message.status === "proposed" && message.needs_review) notifyNewQuestion(message);  // not auto-approved ones
    refresh();
  });
  select(items()[0] || null);
})();
