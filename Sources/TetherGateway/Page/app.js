"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const state = {
    lastSeq: null,        // the last event id seen; the stream resumes from it
    source: null,
    profiles: [],
    sessions: new Map(),  // profile -> Map(id -> session)
    approvals: new Map(), // id -> approval.requested event
    open: null,           // {profile, session} of the open transcript
    parts: new Map(),     // part id -> {el, kind, done}
    pending: null,        // live events for the open session that arrived while its history loaded
    notifications: null,  // profile whose notifications are shown
    loggedIn: false,
  };
  const decisionNames = {
    accept: "Accept", accept_for_session: "Accept for session", accept_with_amendment: "Accept with amendment",
    decline: "Decline", cancel: "Cancel", answered: "Answer", rejected: "Reject",
  };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }
  const enc = encodeURIComponent;

  // ---- HTTP ---------------------------------------------------------------------------------

  class Unauthorized extends Error {}

  async function api(path, options) {
    return (await request(path, options)).body;
  }

  // The parsed body and the response (for its headers).
  async function request(path, options) {
    const init = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    if (init.body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(init.body);
    }
    const response = await fetch(path, init);
    if (response.status === 401) { showLogin(); throw new Unauthorized("unauthorized"); }
    const text = await response.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
    if (!response.ok) {
      const message = body && (body.detail || body.title) ? [body.title, body.detail].filter(Boolean).join(": ") : "HTTP " + response.status;
      const error = new Error(message);
      error.status = response.status;
      error.body = body;
      throw error;
    }
    return { body, response };
  }

  function notice(message) { $("notice").textContent = message || ""; }
  function report(error) { if (!(error instanceof Unauthorized)) notice(String(error.message || error)); }

  // ---- Login --------------------------------------------------------------------------------

  function showLogin() {
    state.loggedIn = false;
    closeStream();
    $("app").hidden = true;
    $("login").hidden = false;
    $("login-token").focus();
  }

  async function login(event) {
    event.preventDefault();
    const input = $("login-token");
    const token = input.value;
    input.value = "";  // the cookie keeps the session; the page never keeps the token
    $("login-error").textContent = "";
    try {
      const response = await fetch("v1/login", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
      });
      if (response.status === 401) {
        $("login-error").textContent = "That token was refused. Use one of the tokens in the gateway's [serve] table.";
        input.focus();
        return;
      }
      if (!response.ok) {
        $("login-error").textContent = "Login failed (HTTP " + response.status + "). Try again.";
        return;
      }
    } catch (_) {
      $("login-error").textContent = "The gateway cannot be reached. Check the connection and try again.";
      return;
    }
    await start();
  }

  async function logout() {
    try { await api("v1/logout", { method: "POST", body: {} }); } catch (_) { /* logged out either way */ }
    // A later login starts afresh: nothing of this one is kept on the page.
    state.lastSeq = null;
    closeSession();
    for (const id of [...state.approvals.keys()]) removeApproval(id);
    showLogin();
  }

  // ---- Start and the event stream -----------------------------------------------------------

  async function start() {
    try {
      // The current end of the log first, so nothing that happens while the lists load is missed.
      if (state.lastSeq === null) {
        const end = await api("v1/events?format=json");
        state.lastSeq = end.next;
      }
      const profiles = await api("v1/profiles");
      state.loggedIn = true;
      $("login").hidden = true;
      $("app").hidden = false;
      state.profiles = profiles;
      renderProfiles();
      await loadApprovals();
      for (const profile of profiles) loadSessions(profile);
      openStream();
    } catch (error) {
      report(error);
    }
  }

  function openStream() {
    closeStream();
    // After this the browser itself resends Last-Event-ID on every reconnect; `since` only
    // seeds the first connection (a header, when present, wins over it).
    const url = "v1/events" + (state.lastSeq !== null ? "?since=" + enc(state.lastSeq) : "");
    const source = new EventSource(url);
    state.source = source;
    source.onopen = () => { streamState("Live"); };
    source.onmessage = (message) => {
      const seq = Number(message.lastEventId);
      let event = null;
      try { event = JSON.parse(message.data); } catch (_) { /* counted, not shown */ }
      // cursor_expired moves the starting point back: after a reset log hands out seqs again,
      // what follows is new although its seqs may be ones already seen.
      const expired = event !== null && event.type === "error" && (event.data || {}).code === "cursor_expired";
      if (!expired && state.lastSeq !== null && seq <= state.lastSeq) return;  // each event once
      state.lastSeq = seq;
      if (event !== null) handle(event);
    };
    source.onerror = () => {
      if (source !== state.source) return;
      if (source.readyState === EventSource.CLOSED) {
        // A refused (re)connection: find out why, then log in again or retry from the last id.
        streamState("Offline");
        probe();
      } else {
        streamState("Reconnecting…");
      }
    };
  }

  function closeStream() {
    if (state.source) { state.source.close(); state.source = null; }
  }

  async function probe() {
    if (state.source && state.source.readyState === EventSource.CLOSED) { state.source.close(); state.source = null; }
    try {
      await api("v1/profiles");
      setTimeout(() => { if (state.loggedIn && !state.source) openStream(); }, 1000);
    } catch (error) {
      if (error instanceof Unauthorized) return;  // the login form is up; logging in resumes
      setTimeout(() => { if (state.loggedIn && !state.source) probe(); }, 3000);
    }
  }

  function streamState(text) { $("stream-state").textContent = text; }

  function handle(event) {
    switch (event.type) {
      case "connection.state": setConnection(event.profile, event.data || {}); break;
      case "approval.requested": addApproval(event); break;
      case "approval.resolved": removeApproval((event.data || {}).id); break;
      case "session.created": case "session.updated": upsertSession(event.profile, event.data || {}); break;
      case "session.deleted": deleteSession(event.profile, (event.data || {}).id || event.session); break;
      case "notification.received": if (state.notifications === event.profile) addNotification(event.data || {}, true); break;
      case "error":
        if (event.data && event.data.code === "cursor_expired") {
          notice(/past the end/.test(event.data.message || "")
            ? "The gateway's log was reset; the page goes on from its new start."
            : "Some older events were trimmed from the gateway's log; the page shows what is left.");
          loadApprovals().catch(report);  // what is pending now, as the log no longer says
        }
        break;
    }
    if (event.type === "session.status") setSessionStatus(event.profile, event.session, (event.data || {}).status);
    if (state.open && event.profile === state.open.profile && event.session === state.open.session) {
      if (state.pending) state.pending.push(event); else renderTranscriptEvent(event);
    }
  }

  // ---- Profiles and sessions ----------------------------------------------------------------

  function profileElement(name) {
    return document.querySelector('#profile-list [data-profile="' + CSS.escape(name) + '"]');
  }

  function renderProfiles() {
    const list = $("profile-list");
    list.replaceChildren();
    for (const profile of state.profiles) {
      const caps = profile.capabilities || [];
      const card = el("article", { class: "card profile", "data-profile": profile.name },
        el("h3", { text: profile.name }),
        el("p", { class: "muted" }, profile.backend + " · ", el("span", { class: "state" })));
      const row = el("div", { class: "row" });
      if (caps.includes("sessions.create")) {
        row.append(el("button", { type: "button", text: "New session", "aria-label": "New session in " + profile.name,
          onclick: () => createSession(profile.name) }));
      }
      if (profile.backend === "notification" || caps.includes("notifications")) {
        row.append(el("button", { type: "button", text: "Notifications", "aria-label": "Notifications of " + profile.name,
          onclick: () => openNotifications(profile.name) }));
      }
      if (row.children.length) card.append(row);
      if (caps.includes("sessions")) card.append(el("ul", { class: "sessions", "aria-label": "Sessions of " + profile.name }));
      list.append(card);
      setConnection(profile.name, profile.connection || {});
    }
  }

  function setConnection(name, data) {
    const card = profileElement(name);
    if (!card) return;
    const span = card.querySelector(".state");
    const word = data.state || "unknown";
    span.className = "state state-" + word;
    span.textContent = word + (data.attempt ? " (attempt " + data.attempt + ")" : "");
  }

  async function loadSessions(profile) {
    if (!(profile.capabilities || []).includes("sessions")) return;
    try {
      const sessions = await api("v1/profiles/" + enc(profile.name) + "/sessions");
      const map = new Map();
      for (const session of sessions) map.set(session.id, session);
      state.sessions.set(profile.name, map);
      renderSessions(profile.name);
    } catch (error) { report(error); }
  }

  function upsertSession(profile, session) {
    if (!session.id) return;
    if (!state.sessions.has(profile)) state.sessions.set(profile, new Map());
    const map = state.sessions.get(profile);
    map.set(session.id, Object.assign({}, map.get(session.id) || {}, session));
    renderSessions(profile);
    if (state.open && state.open.profile === profile && state.open.session === session.id) renderSessionHeader();
  }

  function deleteSession(profile, id) {
    const map = state.sessions.get(profile);
    if (map && map.delete(id)) renderSessions(profile);
  }

  function setSessionStatus(profile, id, status) {
    const map = state.sessions.get(profile);
    if (!map || !id || !status) return;
    const session = map.get(id) || { id };
    session.status = status;
    map.set(id, session);
    renderSessions(profile);
    if (state.open && state.open.profile === profile && state.open.session === id) renderSessionHeader();
  }

  function renderSessions(profile) {
    const card = profileElement(profile);
    const list = card && card.querySelector(".sessions");
    if (!list) return;
    const sessions = [...(state.sessions.get(profile) || new Map()).values()]
      .filter((s) => !s.archived)
      .sort((a, b) => (b.updated_at || b.created_at || 0) - (a.updated_at || a.created_at || 0))
      .slice(0, 30);
    list.replaceChildren(...sessions.map((session) => {
      const title = session.title || session.id;
      return el("li", {}, el("button", {
        type: "button", class: "session", "data-profile": profile, "data-session-id": session.id,
        "aria-label": "Open session " + title + (session.status ? " (" + session.status + ")" : ""),
        onclick: () => openSession(profile, session.id),
      }, el("span", { text: title }), session.status ? el("span", { class: "muted", text: " · " + session.status }) : null));
    }));
    if (!sessions.length) list.replaceChildren(el("li", { class: "muted", text: "No sessions yet." }));
  }

  async function createSession(profile) {
    try {
      const session = await api("v1/profiles/" + enc(profile) + "/sessions", { method: "POST", body: {} });
      upsertSession(profile, session);
      openSession(profile, session.id);
    } catch (error) { report(error); }
  }

  // ---- Transcript ---------------------------------------------------------------------------

  function show(view) {
    $("home").hidden = view !== "home";
    $("session-view").hidden = view !== "session";
    $("notification-view").hidden = view !== "notifications";
  }

  function renderSessionHeader() {
    const { profile, session } = state.open;
    const info = (state.sessions.get(profile) || new Map()).get(session) || {};
    $("session-title").textContent = info.title || session;
    $("session-meta").textContent = profile + (info.directory ? " · " + info.directory : "") + (info.status ? " · " + info.status : "");
  }

  async function openSession(profile, session) {
    state.notifications = null;
    state.open = { profile, session };
    state.parts = new Map();
    state.pending = [];
    const transcript = $("transcript");
    transcript.replaceChildren();
    transcript.setAttribute("data-profile", profile);
    transcript.setAttribute("data-session-id", session);
    $("plan").hidden = true;
    $("usage").hidden = true;
    renderSessionHeader();
    show("session");
    window.scrollTo(0, 0);
    const caps = (state.profiles.find((p) => p.name === profile) || {}).capabilities || [];
    $("prompt-form").hidden = !caps.includes("send");
    $("abort").hidden = !caps.includes("abort");
    try {
      if (caps.includes("history")) {
        const events = await api("v1/profiles/" + enc(profile) + "/sessions/" + enc(session) + "/history");
        if (!sameOpen(profile, session)) return;
        for (const event of events) renderTranscriptEvent(event);
      }
    } catch (error) {
      report(error);
    } finally {
      if (sameOpen(profile, session)) {
        const queued = state.pending || [];
        state.pending = null;
        for (const event of queued) renderTranscriptEvent(event);
      }
    }
  }

  function sameOpen(profile, session) {
    return state.open && state.open.profile === profile && state.open.session === session;
  }

  function closeSession() {
    state.open = null;
    state.pending = null;
    $("transcript").removeAttribute("data-profile");
    $("transcript").removeAttribute("data-session-id");
    show("home");
  }

  function renderTranscriptEvent(event) {
    const data = event.data || {};
    switch (event.type) {
      case "part.started": case "part.delta": case "part.completed": renderPart(event); break;
      case "part.removed": {
        const part = state.parts.get(event.part);
        if (part) { part.el.remove(); state.parts.delete(event.part); }
        break;
      }
      case "plan.updated": renderPlan(data.steps || [], data.explanation); break;
      case "usage.updated": renderUsage(data); break;
      case "turn.completed": {
        if (data.usage) renderUsage(data.usage);
        const outcome = data.status || "completed";
        const text = "Turn " + outcome + (data.error ? ": " + (data.error.message || JSON.stringify(data.error)) : "");
        const id = "turn-end-" + (event.turn || "");
        if (event.turn && document.getElementById(id)) break;
        $("transcript").append(el("p", { class: "turn-end", id: event.turn ? id : null, "data-turn-status": outcome, text }));
        break;
      }
    }
  }

  function partText(data) {
    if (typeof data.text === "string") return data.text;
    return "";
  }

  function renderPart(event) {
    const id = event.part;
    const data = event.data || {};
    if (!id || data.kind === "step") return;
    let part = state.parts.get(id);
    if (part && part.done && event.type !== "part.completed") return;  // the final text is in
    if (!part) {
      part = createPart(id, data);
      state.parts.set(id, part);
      $("transcript").append(part.el);
    }
    if (event.type === "part.delta") {
      const target = data.field === "output" ? part.output : part.body;
      if (target) target.textContent += data.delta || "";
      return;
    }
    updatePart(part, data, event.type === "part.completed");
  }

  function createPart(id, data) {
    const kind = data.kind || "text";
    const body = el("div", { class: "body" });
    if (kind === "text") {
      const role = data.role || "assistant";
      const node = el("div", { class: "part text " + role, "data-part-id": id },
        el("span", { class: "who", "aria-hidden": "true", text: role === "user" ? "You" : "Agent" }), body);
      return { el: node, kind, body, done: false };
    }
    if (kind === "reasoning") {
      const node = el("details", { class: "part reasoning", "data-part-id": id }, el("summary", { text: "Reasoning" }), body);
      return { el: node, kind, body, done: false };
    }
    if (kind === "tool" || kind === "command") {
      const summary = el("summary", { text: kind });
      const output = el("pre", { class: "output" });
      const node = el("details", { class: "part tool", "data-part-id": id, open: true }, summary, el("pre", { class: "input" }), output);
      return { el: node, kind, summary, output, input: node.querySelector(".input"), done: false };
    }
    const node = el("details", { class: "part other", "data-part-id": id }, el("summary", { text: kind }), body);
    return { el: node, kind, body, done: false };
  }

  function updatePart(part, data, completed) {
    if (part.kind === "tool" || part.kind === "command") {
      const status = data.status || (completed ? "completed" : "running");
      const name = data.title || data.command || data.tool || part.kind;
      part.summary.textContent = (data.tool || part.kind) + ": " + name + " — " + status;
      const input = data.command || (data.input && Object.keys(data.input).length ? JSON.stringify(data.input, null, 1) : "");
      part.input.textContent = input;
      part.input.hidden = !input;
      if (typeof data.output === "string") part.output.textContent = data.output;
      if (data.error) part.output.textContent = String(data.error.message || data.error);
      if (data.exit_code !== undefined) part.output.textContent += (part.output.textContent ? "\n" : "") + "exit " + data.exit_code;
      part.output.hidden = !part.output.textContent;
      const finished = ["completed", "failed", "declined"].includes(status);
      if (finished) part.el.open = false;  // done: collapsed, its output a tap away
    } else if (part.kind === "text" || part.kind === "reasoning") {
      if (completed || partText(data)) part.body.textContent = partText(data);
    } else {
      part.body.textContent = partText(data) || JSON.stringify(data, null, 1);
    }
    if (completed) part.done = true;
  }

  function renderPlan(steps, explanation) {
    const box = $("plan");
    box.replaceChildren(el("h3", { text: "Plan" }));
    if (explanation) box.append(el("p", { text: explanation }));
    box.append(el("ul", {}, ...steps.map((s) => el("li", { text: "[" + (s.status || "pending") + "] " + (s.step || "") }))));
    box.className = "card";
    box.hidden = false;
  }

  function renderUsage(u) {
    const parts = [];
    if (u.input_tokens !== undefined) parts.push(u.input_tokens + " in");
    if (u.output_tokens !== undefined) parts.push(u.output_tokens + " out");
    if (u.reasoning_tokens) parts.push(u.reasoning_tokens + " reasoning");
    if (u.cache_read_tokens) parts.push(u.cache_read_tokens + " cached");
    if (u.cost !== undefined) parts.push("$" + Number(u.cost).toFixed(4));
    if (u.context_window) parts.push("context " + u.context_window);
    $("usage").textContent = "Usage: " + parts.join(" · ");
    $("usage").className = "muted";
    $("usage").hidden = false;
  }

  async function sendPrompt(event) {
    event.preventDefault();
    if (!state.open) return;
    const text = $("prompt").value.trim();
    if (!text) return;
    const { profile, session } = state.open;
    $("send").disabled = true;
    try {
      await api("v1/profiles/" + enc(profile) + "/sessions/" + enc(session) + "/turns", { method: "POST", body: { text } });
      $("prompt").value = "";
      notice("");
    } catch (error) { report(error); } finally { $("send").disabled = false; }
  }

  async function abortTurn() {
    if (!state.open) return;
    const { profile, session } = state.open;
    try { await api("v1/profiles/" + enc(profile) + "/sessions/" + enc(session) + "/abort", { method: "POST", body: {} }); }
    catch (error) { report(error); }
  }

  // ---- Approvals ----------------------------------------------------------------------------

  async function loadApprovals() {
    const { body: events, response } = await request("v1/approvals");
    // A profile whose backend could not be asked is not in the list: its cards stay.
    const unavailable = new Set((response.headers.get("Tether-Unavailable-Profiles") || "").split(",").filter(Boolean).map(decodeURIComponent));
    const ids = new Set();
    for (const event of events) { ids.add((event.data || {}).id); addApproval(event); }
    for (const [id, event] of [...state.approvals]) if (!ids.has(id) && !unavailable.has(event.profile)) removeApproval(id);
  }

  function addApproval(event) {
    const data = event.data || {};
    if (!data.id || state.approvals.has(data.id)) return;
    state.approvals.set(data.id, event);
    const risk = ["low", "medium", "high"].includes(data.risk) ? data.risk : null;
    const card = el("article", {
      class: "card approval" + (risk ? " risk-" + risk : ""), "data-approval-id": data.id,
      "data-profile": event.profile, "data-session-id": data.session || event.session || "",
      "aria-label": "Approval: " + (data.title || data.command || data.kind || "request"),
    });
    if (risk) card.append(el("p", { class: "risk", text: "Risk: " + risk }));
    card.append(el("p", { class: "title", text: data.title || data.kind || "Approval" }));
    if (data.command) card.append(el("pre", { class: "command", text: data.command }));
    else if (Array.isArray(data.patterns) && data.patterns.length) card.append(el("pre", { class: "patterns", text: data.patterns.join("\n") }));
    if (Array.isArray(data.changes) && data.changes.length) {
      card.append(el("pre", { class: "changes", text: data.changes.map((c) => (c.kind ? c.kind + " " : "") + (c.path || JSON.stringify(c))).join("\n") }));
    }
    if (data.cwd) card.append(el("p", { class: "cwd", text: "in " + data.cwd }));
    if (data.reason) card.append(el("p", { class: "reason", text: data.reason }));
    const sessionID = data.session || event.session || "";
    const known = (state.sessions.get(event.profile) || new Map()).get(sessionID);
    card.append(el("p", { class: "muted", text: event.profile + " · " + (known && known.title ? known.title : "session " + sessionID) }));
    const row = el("div", { class: "row decisions" });
    for (const option of data.options || []) {
      const label = decisionNames[option] || option;
      row.append(el("button", { type: "button", "data-decision": option, class: option === "accept" ? "primary" : null,
        "aria-label": label + ": " + (data.command || data.title || "approval"), text: label,
        onclick: (click) => answer(event, option, click.currentTarget) }));
    }
    card.append(row);
    $("approval-list").append(card);
    renderApprovalCount();
  }

  function removeApproval(id) {
    if (!id || !state.approvals.has(id)) return;
    state.approvals.delete(id);
    const card = document.querySelector('[data-approval-id="' + CSS.escape(id) + '"]');
    if (card) card.remove();
    renderApprovalCount();
  }

  function renderApprovalCount() {
    const count = state.approvals.size;
    $("approvals-count").textContent = String(count);
    $("approvals-button").setAttribute("aria-label", "Pending approvals: " + count);
    $("approvals-empty").hidden = count > 0;
  }

  async function answer(event, decision, button) {
    const data = event.data || {};
    const body = { decision };
    if (decision === "accept_with_amendment") {
      const argv = window.prompt("The command to allow instead (words separated by spaces):", data.command || "");
      if (!argv) return;
      body.amendment = argv.split(/\s+/).filter(Boolean);
    }
    const buttons = button.parentElement.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await api("v1/profiles/" + enc(event.profile) + "/approvals/" + enc(data.id), { method: "POST", body });
      removeApproval(data.id);
    } catch (error) {
      if (error.status === 409 || error.status === 404) {
        notice(error.status === 409 ? "Already answered elsewhere: " + error.message : "That approval is no longer pending.");
        removeApproval(data.id);
      } else {
        report(error);
        buttons.forEach((b) => { b.disabled = false; });
      }
    }
  }

  // ---- Notifications ------------------------------------------------------------------------

  async function openNotifications(profile) {
    state.open = null;
    state.notifications = profile;
    $("notifications-title").textContent = "Notifications · " + profile;
    $("notification-list").replaceChildren();
    show("notifications");
    try {
      const list = await api("v1/profiles/" + enc(profile) + "/notifications?limit=100");
      for (const item of list) addNotification(item, false);
    } catch (error) { report(error); }
  }

  function addNotification(item, first) {
    const node = el("li", { class: "card notification", "data-notification-id": item.id },
      el("strong", { text: item.title || "" }), el("div", { class: "body", text: item.body || "" }),
      el("span", { class: "muted", text: (item.read ? "read" : "unread") + (item.priority ? " · " + item.priority : "") }));
    if (first) $("notification-list").prepend(node); else $("notification-list").append(node);
  }

  async function readAll() {
    if (!state.notifications) return;
    try {
      await api("v1/profiles/" + enc(state.notifications) + "/notifications/read-all", { method: "POST", body: {} });
      openNotifications(state.notifications);
    } catch (error) { report(error); }
  }

  // ---- Wiring -------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", login);
    $("logout").addEventListener("click", logout);
    $("approvals-button").addEventListener("click", () => {
      $("approvals").scrollIntoView({ behavior: "smooth", block: "start" });
    });
    $("back").addEventListener("click", closeSession);
    $("notifications-back").addEventListener("click", () => { state.notifications = null; show("home"); });
    $("read-all").addEventListener("click", readAll);
    $("prompt-form").addEventListener("submit", sendPrompt);
    $("abort").addEventListener("click", abortTurn);
    // Back from sleep: a stream the browser gave up on is reopened from the last id.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && state.loggedIn && (!state.source || state.source.readyState === EventSource.CLOSED)) openStream();
    });
    window.addEventListener("online", () => {
      if (state.loggedIn && (!state.source || state.source.readyState === EventSource.CLOSED)) openStream();
    });
    start();
  });
})();
