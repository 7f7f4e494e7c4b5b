// Shared by every page: a websocket that reconnects with backoff, CSRF for POSTs, and the live pending count.
"use strict";
(function () {
  const script = document.currentScript;

  function csrfToken() {
    const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function postForm(url, fields) {
    const body = new URLSearchParams(fields);
    const response = await fetch(url, {
      method: "POST", body, credentials: "same-origin",
      headers: {"X-CSRFToken": csrfToken(), "Accept": "application/json"},
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = {ok: false, error: response.statusText}; }
    data.httpStatus = response.status;
    return data;
  }

  // A socket that reconnects (1 s doubling to 30 s) and calls onOpen after every (re)connect, so that a page
  // can resume from the last sequence number it holds.
  function liveSocket(path, {onMessage, onOpen}) {
    let delay = 1000, socket = null;
    const state = document.getElementById("live-state");
    function connect() {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      socket = new WebSocket(scheme + location.host + path);
      socket.onopen = () => { delay = 1000; if (state) state.className = "live-state live-on"; if (onOpen) onOpen(); };
      socket.onmessage = (e) => { try { onMessage(JSON.parse(e.data)); } catch (err) { console.error(err); } };
      socket.onclose = () => {
        if (state) state.className = "live-state live-off";
        setTimeout(connect, delay + Math.random() * 250);
        delay = Math.min(delay * 2, 30000);
      };
    }
    connect();
    return {close: () => socket && socket.close()};
  }

  function debounce(fn, ms) {
    let timer = null;
    return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
  }

  // Text for Plotly. Its hover boxes, labels, legends and titles render a subset of HTML (<a href>, <b>, <i>,
  // <span style>, <br>) and entities (&lt;, &#60;), so text from a trace, a run or a reviewer (a question, a
  // baseline's or a model's name) is handed over with &, < and > escaped: Plotly turns the entities back into
  // the characters typed and shows them as text, never as markup. Not-a-string (null: a gap) is passed as it is.
  function plotlyText(value) {
    if (value === null || value === undefined) return value;
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  const refreshPending = debounce(async () => {
    const badge = document.getElementById("pending-count");
    if (!badge) return;
    const response = await fetch(script.dataset.pendingUrl, {credentials: "same-origin"});
    if (!response.ok) return;
    const data = await response.json();
    badge.textContent = data.pending;
    badge.classList.toggle("badge-on", data.pending > 0);
  }, 200);

  // Every page listens to the all-runs group; pages add their own handlers through KSeek.onRunsEvent.
  const runsHandlers = [];
  liveSocket("/ws/runs/", {
    onOpen: refreshPending,
    onMessage: (message) => {
      // A finished run's waiting questions are closed: the badge counts them no more.
      if (message.type === "question.changed" || message.type === "run.changed") refreshPending();
      runsHandlers.forEach((handler) => handler(message));
    },
  });

  window.KSeek = {csrfToken, postForm, liveSocket, debounce, refreshPending, plotlyText,
                  onRunsEvent: (handler) => runsHandlers.push(handler)};
})();
