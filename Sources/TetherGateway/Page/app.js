"use strict";
// The gateway's page (gateway.md, "The page"). Every URL is relative (the page is often behind a
// tunnel or a proxy under a path prefix); every value from the API goes into the DOM as text or
// as nodes built here, never as HTML.
(function () {
  const $ = (id) => document.getElementById(id);
  const state = {
    lastSeq: null,        // the last event id seen; the stream resumes from it
    source: null,
    auth: "token",        // GET /v1/health: "none" when the gateway runs without tokens
    profiles: [],
    sessions: new Map(),  // profile -> Map(id -> session)
    approvals: new Map(), // id -> approval.requested event
    open: null,           // {profile, session} of the open transcript
    parts: new Map(),     // part id -> {el, kind, done, raw}
    pending: null,        // live events for the open session that arrived while its history loaded
    notifications: null,  // profile whose notifications are shown
    loggedIn: false,
    fromList: false,      // the open view was reached from the list: the Back button goes back
    worker: null,         // the service worker's registration, for notifications
  };

  // ---- Words people read instead of the schema's -------------------------------------------

  const decisionNames = {
    accept: "Accept", accept_for_session: "Accept for session", accept_with_amendment: "Accept with amendment",
    decline: "Decline", cancel: "Cancel", answered: "Answer", rejected: "Reject",
  };
  const statusWords = {
    idle: "Idle", busy: "Working", waiting_approval: "Waiting for you", retrying: "Retrying", error: "Error",
    pending: "Pending", running: "Running", completed: "Completed", failed: "Failed", declined: "Declined",
    cancelled: "Stopped", in_progress: "In progress", inProgress: "In progress",
  };
  const kindWords = {
    text: "Message", reasoning: "Reasoning", tool: "Tool", command: "Command", file_change: "File changes",
    patch: "Patch", plan: "Plan", todo: "To-dos", file: "File", step: "Step",
  };
  const approvalKindWords = {
    command: "Run a command", file_change: "Change files", patch: "Apply a patch", permission: "Permission",
    question: "Question", tool: "Use a tool",
  };
  const changeWords = { add: "Added", create: "Added", update: "Changed", modify: "Changed", delete: "Deleted", remove: "Deleted", move: "Moved", rename: "Moved" };
  const connectionWords = {
    connected: "Connected", connecting: "Connecting", reconnecting: "Reconnecting", failed: "Down",
    disconnected: "Disconnected", unknown: "Unknown",
  };
  const planWords = { pending: "To do", in_progress: "In progress", completed: "Done", cancelled: "Dropped" };
  const turnWords = { completed: "Turn done", failed: "Turn failed", cancelled: "Turn stopped", interrupted: "Turn stopped" };
  const word = (table, key) => (key === undefined || key === null || key === "") ? "" : (table[key] || String(key).replace(/_/g, " "));

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
    return node;
  }
  const enc = encodeURIComponent;

  // ---- Times: ages on screen, the exact time on the element's title -------------------------

  function millis(value) {
    if (typeof value === "number") return value < 1e11 ? value * 1000 : value;  // seconds or ms since the epoch
    if (typeof value === "string") { const parsed = Date.parse(value); return isNaN(parsed) ? null : parsed; }
    return null;
  }

  function age(ms) {
    const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (seconds < 45) return "just now";
    const minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + " min ago";
    const hours = Math.round(minutes / 60);
    if (hours < 24) return hours + " h ago";
    const days = Math.round(hours / 24);
    if (days < 7) return days + (days === 1 ? " day ago" : " days ago");
    return new Date(ms).toLocaleDateString();
  }

  function timeEl(value, prefix) {
    const ms = millis(value);
    if (ms === null) return null;
    const exact = new Date(ms);
    return el("time", { datetime: exact.toISOString(), title: exact.toLocaleString(), "data-ts": ms, "data-prefix": prefix || "",
      text: (prefix || "") + age(ms) });
  }

  function refreshAges() {
    for (const node of document.querySelectorAll("time[data-ts]")) {
      node.textContent = node.dataset.prefix + age(Number(node.dataset.ts));
    }
  }

  // ---- Markdown, built as DOM nodes (never as an HTML string) -------------------------------
  // Paragraphs, headings, lists, quotes, fenced code, code spans, emphasis, and links as their
  // text with the URL after it. The line breaks between blocks stay in the text (as text nodes
  // the layout ignores), so the element holds every character of the part's text but the markup.

  const blockStart = /^(\s*```|\s{0,3}#{1,6}\s|\s*([-*+]|\d{1,9}[.)])\s+|\s{0,3}>)/;
  const listItem = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

  function markdown(text) {
    const out = document.createDocumentFragment();
    const lines = text.split("\n");
    let i = 0;
    const newline = () => { if (i < lines.length) out.append("\n"); };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^(\s*)(```+|~~~+)\s*([\w+.-]*)/.exec(line);
      if (fence) {
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[2])) body.push(lines[i++]);
        const closed = i < lines.length;
        if (closed) i++;
        out.append(el("pre", { class: "md-code" }, el("code", { class: fence[3] ? "language-" + fence[3] : null, text: body.join("\n") })));
        newline();
        continue;
      }
      if (!line.trim()) { i++; newline(); continue; }
      const heading = /^\s{0,3}(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        out.append(el("p", { class: "md-heading md-h" + heading[1].length }, ...inline(heading[2])));
        i++; newline();
        continue;
      }
      if (listItem.test(line)) {
        const ordered = /^\s*\d/.test(line);
        const list = el(ordered ? "ol" : "ul", { class: "md-list" });
        while (i < lines.length && listItem.test(lines[i]) && /^\s*\d/.test(lines[i]) === ordered) {
          const item = listItem.exec(lines[i]);
          const body = [item[3]];
          i++;
          while (i < lines.length && lines[i].trim() && !listItem.test(lines[i]) && /^\s+/.test(lines[i])) body.push(lines[i++].trim());
          list.append(el("li", {}, ...inline(body.join("\n"))));
          if (i < lines.length && listItem.test(lines[i])) list.append("\n");
        }
        out.append(list);
        newline();
        continue;
      }
      if (/^\s{0,3}>/.test(line)) {
        const body = [];
        while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
        out.append(el("blockquote", { class: "md-quote" }, ...inline(body.join("\n"))));
        newline();
        continue;
      }
      const body = [line];
      i++;
      while (i < lines.length && lines[i].trim() && !blockStart.test(lines[i])) body.push(lines[i++]);
      out.append(el("p", { class: "md-p" }, ...inline(body.join("\n"))));
      newline();
    }
    return out;
  }

  // Code spans first (nothing inside them is markup), then links, strong, emphasis. Spans are
  // bounded (2,000 characters), so an unclosed marker costs a bounded look-ahead, not a scan
  // to the end of the paragraph from every marker (quadratic on a long paragraph).
  const inlinePattern = /(`+)([^`]|[^`][\s\S]{0,2000}?[^`])\1(?!`)|\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)|\*\*(?=\S)([\s\S]{0,2000}?\S)\*\*|__(?=\S)([\s\S]{0,2000}?\S)__(?!\w)|\*(?=[^\s*])([^*]{0,2000}?[^\s*]|[^\s*])\*|(?<![\w])_(?=[^\s_])([^_]{0,2000}?[^\s_]|[^\s_])_(?!\w)/g;

  function inline(text) {
    const nodes = [];
    let last = 0;
    inlinePattern.lastIndex = 0;
    const matches = [...text.matchAll(inlinePattern)];
    for (const m of matches) {
      if (m.index > last) nodes.push(text.slice(last, m.index));
      if (m[1] !== undefined) nodes.push(el("code", { class: "md-code-span", text: m[2] }));
      else if (m[3] !== undefined) {
        nodes.push(el("span", { class: "md-link" }, ...inline(m[3]), " (", el("span", { class: "md-url", text: m[4] }), ")"));
      } else if (m[5] !== undefined || m[6] !== undefined) nodes.push(el("strong", {}, ...inline(m[5] !== undefined ? m[5] : m[6])));
      else nodes.push(el("em", {}, ...inline(m[7] !== undefined ? m[7] : m[8])));
      last = m.index + m[0].length;
    }
    if (last < text.length) nodes.push(text.slice(last));
    return nodes;
  }

  // ---- Diffs: each file's path, kind and unified diff with a +/− gutter ----------------------

  function changeKind(change) {
    const kind = change.kind && typeof change.kind === "object" ? change.kind.type : change.kind;
    return typeof kind === "string" ? kind : "";
  }

  function diffFile(change) {
    const path = typeof change.path === "string" ? change.path : "";
    const kind = changeKind(change);
    const head = el("p", { class: "diff-head" },
      el("span", { class: "diff-kind diff-kind-" + (kind || "change") , text: word(changeWords, kind) || "Changed" }), " ",
      el("code", { class: "diff-path", text: path || "(no path)" }));
    const moved = change.move_path || (change.kind && change.kind.move_path);
    if (typeof moved === "string" && moved) head.append(" → ", el("code", { class: "diff-path", text: moved }));
    const box = el("div", { class: "diff-file", "data-diff-file": path }, head);
    const diff = typeof change.diff === "string" ? change.diff : typeof change.unified_diff === "string" ? change.unified_diff : "";
    if (diff) box.append(diffLines(diff));
    else if (typeof change.content === "string") box.append(diffLines(change.content.replace(/\n$/, "").split("\n").map((l) => "+" + l).join("\n")));
    return box;
  }

  function diffLines(text) {
    const lines = el("div", { class: "diff-lines" });
    for (const line of text.replace(/\n$/, "").split("\n")) {
      let kind = "context", mark = " ", body = line;
      if (line.startsWith("@@")) { kind = "hunk"; mark = " "; body = line; }
      else if (line.startsWith("+++ ") || line.startsWith("--- ") || line.startsWith("diff ") || line.startsWith("index ")) { kind = "meta"; mark = " "; }
      else if (line.startsWith("+")) { kind = "add"; mark = "+"; body = line.slice(1); }
      else if (line.startsWith("-")) { kind = "del"; mark = "−"; body = line.slice(1); }
      else if (line.startsWith(" ")) body = line.slice(1);
      lines.append(el("span", { class: "diff-line diff-" + kind, "data-diff-line": kind },
        el("span", { class: "diff-gutter", text: mark }), el("span", { class: "diff-text", text: body }), "\n"));
    }
    return el("pre", { class: "diff", tabindex: "0", "aria-label": "Diff" }, lines);
  }

  function diffList(changes) {
    return el("div", { class: "diffs" }, ...changes.filter((c) => c && typeof c === "object").map(diffFile));
  }

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
  function report(error) {
    if (error instanceof Unauthorized) return;
    if (error instanceof TypeError) { offline(true); return; }  // fetch itself failed: no network, or no gateway
    notice(String(error.message || error));
  }

  function offline(on) {
    $("offline").hidden = !on;
    document.body.classList.toggle("offline", on);
    if (on) streamState("Offline");
  }

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

  // A pairing link (`tether pair`) carries a one-time code in its fragment: exchanged for the
  // login cookie, then removed from the address bar and the history.
  async function pairFromLink() {
    const match = /^#pair=([A-Za-z0-9_-]+)$/.exec(location.hash);
    if (!match) return;
    history.replaceState(null, "", location.pathname + location.search);
    try {
      const response = await fetch("v1/pair", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code: match[1] }),
      });
      if (!response.ok) {
        $("login-error").textContent = response.status === 401
          ? "That pairing link was already used or has expired (links work once, for 5 minutes). Run tether pair again."
          : "Pairing failed (HTTP " + response.status + ").";
      }
    } catch (_) {
      $("login-error").textContent = "The gateway cannot be reached to pair. Check the connection and try again.";
    }
  }

  async function logout() {
    try { await api("v1/logout", { method: "POST", body: {} }); } catch (_) { /* logged out either way */ }
    // A later login starts afresh: nothing of this one is kept on the page.
    state.lastSeq = null;
    forgetCachedSessions();
    closeSession();
    for (const id of [...state.approvals.keys()]) removeApproval(id);
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    showLogin();
  }

  // ---- Start and the event stream -----------------------------------------------------------

  async function start() {
    try {
      try {
        const health = await api("v1/health");
        state.auth = (health && health.auth) || "token";
      } catch (error) {
        if (error instanceof TypeError) throw error;
      }
      $("logout").hidden = state.auth === "none";
      // The current end of the log first, so nothing that happens while the lists load is missed.
      if (state.lastSeq === null) {
        const end = await api("v1/events?format=json");
        state.lastSeq = end.next;
      }
      const profiles = await api("v1/profiles");
      offline(false);
      state.loggedIn = true;
      $("login").hidden = true;
      $("app").hidden = false;
      state.profiles = profiles;
      renderProfiles();
      await loadApprovals();
      await Promise.all(profiles.map(loadSessions));
      openStream();
      route();
      offerNotifications();
    } catch (error) {
      if (error instanceof TypeError) {
        // No gateway (or no network): the page itself came from the service worker's cache.
        offline(true);
        $("login").hidden = true;
        $("app").hidden = false;
        setTimeout(start, 5000);
        return;
      }
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
    source.onopen = () => { streamState("Live"); offline(false); };
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
      case "connection.state": setConnection(event.profile, Object.assign({ since: event.ts }, event.data || {})); break;
      case "approval.requested": addApproval(event, true); break;
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
    if (event.type === "session.status") setSessionStatus(event.profile, event.session, (event.data || {}).status, event.ts);
    if (state.open && event.profile === state.open.profile && event.session === state.open.session) {
      if (state.pending) state.pending.push(event); else following(() => renderTranscriptEvent(event));
    }
  }

  // ---- Routes: the list (#/), a session (#/s/PROFILE/ID), notifications (#/n/PROFILE) --------

  function go(hash) {
    state.fromList = true;
    if (location.hash === hash) route(); else location.hash = hash;
  }

  function route() {
    if (!state.loggedIn) return;
    const parts = location.hash.replace(/^#\/?/, "").split("/").map((p) => { try { return decodeURIComponent(p); } catch (_) { return ""; } });
    if (parts[0] === "s" && parts[1] && parts[2]) {
      if (!sameOpen(parts[1], parts[2])) openSession(parts[1], parts[2]);
      return;
    }
    if (parts[0] === "n" && parts[1]) { if (state.notifications !== parts[1]) openNotifications(parts[1]); return; }
    if (state.open || state.notifications) closeSession();
    if (parts[0] === "approvals") $("approvals").scrollIntoView({ block: "start" });
  }

  function back() {
    if (state.fromList && history.length > 1) history.back(); else location.hash = "#/";
  }

  // ---- Profiles and sessions ----------------------------------------------------------------

  function profileElement(name) {
    return document.querySelector('#profile-list [data-profile="' + CSS.escape(name) + '"]');
  }

  function profileInfo(name) { return state.profiles.find((p) => p.name === name) || {}; }

  function isDown(name) {
    const connection = profileInfo(name).connection || {};
    return ["failed", "disconnected", "reconnecting"].includes(connection.state);
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
        row.append(el("button", { type: "button", class: "new-session", text: "New session", "aria-label": "New session in " + profile.name,
          "aria-expanded": "false", onclick: (click) => toggleNewSession(profile, click.currentTarget) }));
      }
      if (profile.backend === "notification" || caps.includes("notifications")) {
        row.append(el("button", { type: "button", text: "Notifications", "aria-label": "Notifications of " + profile.name,
          onclick: () => go("#/n/" + enc(profile.name)) }));
      }
      if (row.children.length) card.append(row);
      if (caps.includes("sessions")) card.append(el("ul", { class: "sessions", "aria-label": "Sessions of " + profile.name }));
      list.append(card);
      setConnection(profile.name, profile.connection || {});
    }
  }

  function toggleNewSession(profile, button) {
    const card = profileElement(profile.name);
    const existing = card.querySelector(".new-session-form");
    if (existing) { existing.remove(); button.setAttribute("aria-expanded", "false"); return; }
    button.setAttribute("aria-expanded", "true");
    const id = "new-" + profile.name.replace(/[^\w-]/g, "_");
    const form = el("form", { class: "new-session-form", "aria-label": "New session in " + profile.name },
      el("label", { for: id + "-title", text: "Title (optional)" }),
      el("input", { id: id + "-title", name: "title", type: "text", autocomplete: "off" }),
      el("label", { for: id + "-directory", text: "Directory on the agent's machine (optional)" }),
      el("input", { id: id + "-directory", name: "directory", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "/home/me/project" }),
      el("div", { class: "model-field", hidden: true }),
      el("div", { class: "row" }, el("button", { type: "submit", text: "Create and open" }),
        el("button", { type: "button", text: "Cancel", onclick: () => toggleNewSession(profile, button) })));
    form.addEventListener("submit", async (submit) => {
      submit.preventDefault();
      const body = {};
      const title = form.elements.title.value.trim();
      const directory = form.elements.directory.value.trim();
      if (title) body.title = title;
      if (directory) body.directory = directory;
      if (form.elements.model && form.elements.model.value) body.model = form.elements.model.value;
      form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      try {
        const session = await api("v1/profiles/" + enc(profile.name) + "/sessions", { method: "POST", body });
        form.remove();
        button.setAttribute("aria-expanded", "false");
        upsertSession(profile.name, session);
        go(sessionHash(profile.name, session.id));
      } catch (error) {
        report(error);
        form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      }
    });
    button.closest(".row").after(form);
    form.elements.title.focus();
    offerModels(profile, form, id);
  }

  // Where the backend lists its models (404 where it cannot), the new session may name one.
  async function offerModels(profile, form, id) {
    let models;
    try { models = await api("v1/profiles/" + enc(profile.name) + "/models"); } catch (_) { return; }
    if (!Array.isArray(models) || !models.length || !form.isConnected) return;
    const field = form.querySelector(".model-field");
    field.replaceChildren(el("label", { for: id + "-model", text: "Model" }),
      el("select", { id: id + "-model", name: "model" }, el("option", { value: "", text: "The backend's default" }),
        ...models.map((m) => el("option", { value: m.id, text: m.name || m.id }))));
    field.hidden = false;
  }

  function setConnection(name, data) {
    const profile = profileInfo(name);
    const previous = profile.connection || {};
    const next = Object.assign({}, data);
    // A repeated report of the same state keeps the time it started.
    if (previous.state === next.state && previous.since) next.since = previous.since;
    profile.connection = next;
    const card = profileElement(name);
    if (!card) return;
    const span = card.querySelector(".state");
    const key = next.state || "unknown";
    span.className = "state state-" + key;
    span.replaceChildren(word(connectionWords, key) + (next.attempt ? " (attempt " + next.attempt + ")" : ""));
    const down = isDown(name);
    card.classList.toggle("down", down);
    let banner = card.querySelector(".down-since");
    if (down) {
      if (!banner) { banner = el("p", { class: "down-since", role: "status" }); card.querySelector("p.muted").after(banner); }
      banner.replaceChildren("Backend down", next.since ? " since " : "", next.since ? timeEl(next.since) : null,
        " — its last known sessions are kept below.");
    } else if (banner) {
      banner.remove();
    }
    const create = card.querySelector(".new-session");
    if (create) create.hidden = down;
    renderSessions(name);
    if (state.open && state.open.profile === name) renderSessionHeader();
    if (!down && previous.state && previous.state !== next.state && (profile.capabilities || []).includes("sessions")) loadSessions(profile);
  }

  // The last session lists are kept on this device, so a backend that is down still shows its
  // sessions (greyed) after a reload. Logging out forgets them.
  const cacheKey = (profile) => "tether.sessions." + profile;

  function cacheSessions(profile) {
    try {
      const sessions = [...(state.sessions.get(profile) || new Map()).values()].slice(0, 50)
        .map((s) => ({ id: s.id, title: s.title, directory: s.directory, updated_at: s.updated_at, created_at: s.created_at, status: s.status, archived: s.archived }));
      localStorage.setItem(cacheKey(profile), JSON.stringify(sessions));
    } catch (_) { /* storage full or off: nothing to keep */ }
  }

  function cachedSessions(profile) {
    try { return JSON.parse(localStorage.getItem(cacheKey(profile)) || "[]"); } catch (_) { return []; }
  }

  function forgetCachedSessions() {
    try {
      for (const key of Object.keys(localStorage)) if (key.startsWith("tether.sessions.")) localStorage.removeItem(key);
    } catch (_) { /* nothing kept */ }
  }

  async function loadSessions(profile) {
    if (!(profile.capabilities || []).includes("sessions")) return;
    try {
      const sessions = await api("v1/profiles/" + enc(profile.name) + "/sessions");
      const map = new Map();
      for (const session of sessions) map.set(session.id, session);
      state.sessions.set(profile.name, map);
      cacheSessions(profile.name);
    } catch (error) {
      if (error instanceof Unauthorized) return;
      if (!state.sessions.has(profile.name)) {
        state.sessions.set(profile.name, new Map(cachedSessions(profile.name).map((s) => [s.id, s])));
      }
      if (!isDown(profile.name)) report(error);
    }
    renderSessions(profile.name);
  }

  function upsertSession(profile, session) {
    if (!session.id) return;
    if (!state.sessions.has(profile)) state.sessions.set(profile, new Map());
    const map = state.sessions.get(profile);
    map.set(session.id, Object.assign({}, map.get(session.id) || {}, session));
    renderSessions(profile);
    cacheSessions(profile);
    if (sameOpen(profile, session.id)) renderSessionHeader();
  }

  function deleteSession(profile, id) {
    const map = state.sessions.get(profile);
    if (map && map.delete(id)) { renderSessions(profile); cacheSessions(profile); }
  }

  function setSessionStatus(profile, id, status, ts) {
    const map = state.sessions.get(profile);
    if (!map || !id || !status) return;
    const session = map.get(id) || { id };
    session.status = status;
    const when = millis(ts);
    if (when !== null && (!session.updated_at || millis(session.updated_at) < when)) session.updated_at = when;
    map.set(id, session);
    renderSessions(profile);
    if (sameOpen(profile, id)) renderSessionHeader();
  }

  function sessionTitle(profile, id) {
    const known = (state.sessions.get(profile) || new Map()).get(id);
    return known && known.title ? known.title : "Untitled session " + String(id).slice(-8);
  }

  function sessionHash(profile, id) { return "#/s/" + enc(profile) + "/" + enc(id); }

  function renderSessions(profile) {
    const card = profileElement(profile);
    const list = card && card.querySelector(".sessions");
    if (list) {
      const down = isDown(profile);
      const sessions = [...(state.sessions.get(profile) || new Map()).values()]
        .filter((s) => !s.archived)
        .sort((a, b) => (millis(b.updated_at || b.created_at) || 0) - (millis(a.updated_at || a.created_at) || 0))
        .slice(0, 30);
      list.replaceChildren(...sessions.map((session) => {
        const title = sessionTitle(profile, session.id);
        const status = word(statusWords, session.status);
        const open = sameOpen(profile, session.id);
        return el("li", {}, el("button", {
          type: "button", class: "session" + (down ? " down" : "") + (open ? " current" : "") + (session.status ? " status-" + session.status : ""),
          "data-profile": profile, "data-session-id": session.id, "aria-current": open ? "page" : null,
          "aria-label": "Open session " + title + (status ? " (" + status + ")" : "") + (down ? " (backend down)" : ""),
          onclick: () => go(sessionHash(profile, session.id)),
        }, el("span", { class: "session-title", text: title }),
        el("span", { class: "muted session-meta" }, status ? status : null,
          status && (session.updated_at || session.created_at) ? " · " : null, timeEl(session.updated_at || session.created_at))));
      }));
      if (!sessions.length) list.replaceChildren(el("li", { class: "muted", text: down ? "No sessions known while the backend is down." : "No sessions yet." }));
    }
    // Approval cards name their session by its title once the list knows it.
    for (const node of document.querySelectorAll('.session-name[data-profile="' + CSS.escape(profile) + '"]')) {
      node.textContent = sessionTitle(profile, node.dataset.sessionId);
    }
  }

  // ---- Transcript ---------------------------------------------------------------------------

  function show(view) {
    document.body.dataset.view = view;
    $("session-view").hidden = view !== "session";
    $("notification-view").hidden = view !== "notifications";
    $("placeholder").hidden = view !== "home";
  }

  function renderSessionHeader() {
    const { profile, session } = state.open;
    const info = (state.sessions.get(profile) || new Map()).get(session) || {};
    $("session-title").textContent = sessionTitle(profile, session);
    const status = word(statusWords, info.status);
    $("session-meta").replaceChildren(profile + (info.directory ? " · " + info.directory : "") + (status ? " · " + status : ""),
      info.updated_at ? " · " : "", timeEl(info.updated_at, "updated "));
    // A backend that is down keeps its session on screen, greyed, and takes no prompt meanwhile.
    const down = isDown(profile);
    $("session-view").classList.toggle("down", down);
    $("send").disabled = down;
    $("prompt-down").hidden = !down;
  }

  // Near the end of the page: new text keeps it there; scrolled up, the reader is left alone.
  function atEnd() {
    const s = document.scrollingElement;
    return s.scrollHeight - (s.scrollTop + window.innerHeight) < 120;
  }
  function toEnd() { const s = document.scrollingElement; s.scrollTop = s.scrollHeight; }
  function following(render) {
    const stick = atEnd();
    render();
    if (stick) toEnd();
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
    renderSessions(profile);
    show("session");
    const caps = profileInfo(profile).capabilities || [];
    $("prompt-form").hidden = !caps.includes("send");
    $("abort").hidden = !caps.includes("abort");
    try {
      if (caps.includes("history")) {
        const events = await api("v1/profiles/" + enc(profile) + "/sessions/" + enc(session) + "/history");
        if (!sameOpen(profile, session)) return;
        for (const event of events) renderTranscriptEvent(event);
      }
    } catch (error) {
      if (sameOpen(profile, session)) {
        if (isDown(profile)) transcript.append(el("p", { class: "muted", text: "The backend is down: this session's messages cannot be read now." }));
        else report(error);
      }
    } finally {
      if (sameOpen(profile, session)) {
        const queued = state.pending || [];
        state.pending = null;
        for (const event of queued) renderTranscriptEvent(event);
        for (const event of state.approvals.values()) placeApproval(event);
        toEnd();  // opened, it shows the newest message
      }
    }
  }

  function sameOpen(profile, session) {
    return !!state.open && state.open.profile === profile && state.open.session === session;
  }

  function closeSession() {
    const was = state.open;
    state.open = null;
    state.pending = null;
    state.notifications = null;
    $("transcript").removeAttribute("data-profile");
    $("transcript").removeAttribute("data-session-id");
    $("transcript").replaceChildren();
    show("home");
    if (was) renderSessions(was.profile);
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
      case "approval.requested": placeApproval(event); break;
      case "turn.completed": {
        if (data.usage) renderUsage(data.usage);
        const outcome = data.status || "completed";
        const id = "turn-end-" + (event.turn || "");
        if (event.turn && document.getElementById(id)) break;
        const error = data.error ? ": " + (data.error.message || JSON.stringify(data.error)) : "";
        $("transcript").append(el("p", { class: "turn-end", id: event.turn ? id : null, "data-turn-status": outcome },
          word(turnWords, outcome) + error, event.ts ? " · " : null, timeEl(event.ts)));
        break;
      }
    }
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
      if (data.field === "output") { if (part.output) { part.output.textContent += data.delta || ""; part.output.hidden = false; } }
      else if (part.body) { part.raw += data.delta || ""; if (part.markdown) scheduleBody(part); else renderBody(part); }
      return;
    }
    updatePart(part, data, event.type === "part.completed");
  }

  function renderBody(part) {
    pendingBodies.delete(part);
    if (part.markdown) part.body.replaceChildren(markdown(part.raw));
    else part.body.textContent = part.raw;
  }

  // Streamed Markdown is rendered at most once a frame (a long reply arrives in thousands of
  // deltas; rendering the whole text at each one would cost quadratic time on a phone).
  const pendingBodies = new Set();
  let bodiesScheduled = false;
  function scheduleBody(part) {
    pendingBodies.add(part);
    if (bodiesScheduled) return;
    bodiesScheduled = true;
    const flush = () => {
      bodiesScheduled = false;
      following(() => { for (const waiting of [...pendingBodies]) renderBody(waiting); });
    };
    // A hidden page gets no animation frames: a timer keeps it current for when it is shown.
    if (document.hidden) setTimeout(flush, 250); else requestAnimationFrame(flush);
  }

  function createPart(id, data) {
    const kind = data.kind || "text";
    if (kind === "text") {
      const role = data.role || "assistant";
      const body = el("div", { class: "body" + (role === "user" ? " plain" : " md") });
      const node = el("div", { class: "part text " + role, "data-part-id": id },
        el("span", { class: "who", "aria-hidden": "true", text: role === "user" ? "You" : "Agent" }), body);
      return { el: node, kind, body, raw: "", markdown: role !== "user", done: false };
    }
    if (kind === "reasoning") {
      const body = el("div", { class: "body md" });
      const node = el("details", { class: "part reasoning", "data-part-id": id }, el("summary", { text: "Reasoning" }), body);
      return { el: node, kind, body, raw: "", markdown: true, done: false };
    }
    if (kind === "tool" || kind === "command") {
      const summary = el("summary", { text: word(kindWords, kind) });
      const output = el("pre", { class: "output", hidden: true });
      const input = el("pre", { class: "input", hidden: true });
      const node = el("details", { class: "part tool", "data-part-id": id, open: true }, summary, input, output);
      return { el: node, kind, summary, output, input, done: false };
    }
    if (kind === "file_change" || kind === "patch") {
      const summary = el("summary", { text: word(kindWords, kind) });
      const files = el("div", { class: "files" });
      const output = el("pre", { class: "output", hidden: true });
      const node = el("details", { class: "part file-change", "data-part-id": id, open: true }, summary, files, output);
      return { el: node, kind, summary, files, output, done: false };
    }
    const body = el("div", { class: "body" });
    const node = el("details", { class: "part other", "data-part-id": id }, el("summary", { text: word(kindWords, kind) }), body);
    return { el: node, kind, body, raw: "", markdown: false, done: false };
  }

  function updatePart(part, data, completed) {
    if (part.kind === "tool" || part.kind === "command") {
      const status = data.status || (completed ? "completed" : "running");
      const name = data.title || data.command || data.tool || word(kindWords, part.kind);
      part.summary.textContent = (data.tool && data.tool !== name ? data.tool + ": " : "") + name + " — " + word(statusWords, status);
      const input = data.command || (data.input && Object.keys(data.input).length ? JSON.stringify(data.input, null, 1) : "");
      part.input.textContent = input;
      part.input.hidden = !input;
      if (typeof data.output === "string") part.output.textContent = data.output;
      if (data.error) part.output.textContent = String(data.error.message || data.error);
      if (data.exit_code !== undefined && data.exit_code !== null) part.output.textContent += (part.output.textContent ? "\n" : "") + "exit " + data.exit_code;
      part.output.hidden = !part.output.textContent;
      if (["completed", "failed", "declined"].includes(status)) part.el.open = false;  // done: collapsed, its output a tap away
    } else if (part.kind === "file_change" || part.kind === "patch") {
      const changes = Array.isArray(data.changes) ? data.changes : [];
      const status = data.status || (completed ? "completed" : "running");
      const names = changes.map((c) => c && c.path).filter(Boolean);
      part.summary.textContent = word(kindWords, part.kind) + (names.length ? ": " + names.join(", ") : "") + " — " + word(statusWords, status);
      if (changes.length) part.files.replaceChildren(diffList(changes));
      else if (typeof data.patch === "string" || typeof data.diff === "string") part.files.replaceChildren(diffLines(data.patch || data.diff));
      if (typeof data.output === "string") { part.output.textContent = data.output; part.output.hidden = !data.output; }
    } else if (part.body) {
      const text = typeof data.text === "string" ? data.text : null;
      if (part.kind === "text" || part.kind === "reasoning") {
        if (completed || text) { part.raw = text || ""; renderBody(part); }
      } else {
        part.raw = text !== null ? text : JSON.stringify(data, null, 1);
        renderBody(part);
      }
    }
    if (completed) part.done = true;
  }

  function renderPlan(steps, explanation) {
    const box = $("plan");
    box.replaceChildren(el("h3", { text: "Plan" }));
    if (explanation) box.append(el("p", { text: explanation }));
    box.append(el("ul", {}, ...steps.map((s) => el("li", { class: "plan-" + (s.status || "pending") },
      el("span", { class: "plan-status", text: word(planWords, s.status || "pending") + ": " }), s.step || ""))));
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
    $("usage").textContent = "Tokens: " + parts.join(" · ");
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
      toEnd();
    } catch (error) { report(error); } finally { $("send").disabled = false; }
  }

  async function abortTurn() {
    if (!state.open) return;
    const { profile, session } = state.open;
    try { await api("v1/profiles/" + enc(profile) + "/sessions/" + enc(session) + "/abort", { method: "POST", body: {} }); }
    catch (error) { report(error); }
  }

  // ---- Approvals: on the main list, and in place inside their open session -----------------

  async function loadApprovals() {
    const { body: events, response } = await request("v1/approvals");
    // A profile whose backend could not be asked is not in the list: its cards stay.
    const unavailable = new Set((response.headers.get("Tether-Unavailable-Profiles") || "").split(",").filter(Boolean).map(decodeURIComponent));
    const ids = new Set();
    for (const event of events) { ids.add((event.data || {}).id); addApproval(event, false); }
    for (const [id, event] of [...state.approvals]) if (!ids.has(id) && !unavailable.has(event.profile)) removeApproval(id);
  }

  function approvalSession(event) { return (event.data || {}).session || event.session || ""; }

  function approvalCard(event, where) {
    const data = event.data || {};
    const risk = ["low", "medium", "high"].includes(data.risk) ? data.risk : null;
    const sessionID = approvalSession(event);
    const card = el("article", {
      class: "card approval" + (risk ? " risk-" + risk : "") + " in-" + where, "data-approval-id": data.id,
      "data-profile": event.profile, "data-session-id": sessionID,
      "aria-label": "Approval: " + (data.title || data.command || word(approvalKindWords, data.kind) || "request"),
    });
    const head = el("p", { class: "approval-head" });
    if (risk) head.append(el("span", { class: "risk", text: "Risk: " + risk }));
    if (data.kind) head.append(el("span", { class: "kind", text: word(approvalKindWords, data.kind) }));
    const when = timeEl(event.ts, "asked ");
    if (when) head.append(when);
    card.append(head);
    card.append(el("p", { class: "title", text: data.title || word(approvalKindWords, data.kind) || "Approval" }));
    if (data.command) card.append(el("pre", { class: "command", text: data.command }));
    else if (Array.isArray(data.patterns) && data.patterns.length) card.append(el("pre", { class: "patterns", text: data.patterns.join("\n") }));
    if (data.cwd) card.append(el("p", { class: "cwd", text: "in " + data.cwd }));
    if (data.reason) card.append(el("p", { class: "reason", text: data.reason }));
    // The change itself, above the buttons: judged before it is accepted.
    if (Array.isArray(data.changes) && data.changes.length) card.append(diffList(data.changes));
    if (where === "list") {
      card.append(el("p", { class: "muted where" }, event.profile + " · ",
        el("span", { class: "session-name", "data-profile": event.profile, "data-session-id": sessionID, text: sessionTitle(event.profile, sessionID) }),
        " ", sessionID ? el("button", { type: "button", class: "link open-session", text: "Open session",
          "aria-label": "Open session " + sessionTitle(event.profile, sessionID), onclick: () => go(sessionHash(event.profile, sessionID)) }) : null));
    }
    if (data.kind === "question" && Array.isArray(data.questions) && data.questions.length) card.append(questionForm(event, card, where));
    const row = el("div", { class: "row decisions" });
    for (const option of data.options || []) {
      const label = decisionNames[option] || option.replace(/_/g, " ");
      row.append(el("button", { type: "button", "data-decision": option, class: option === "accept" ? "primary" : null,
        "aria-label": label + ": " + (data.command || data.title || "approval"), text: label,
        onclick: (click) => {
          if (option === "accept_with_amendment") toggleAmendment(event, card, click.currentTarget);
          else answer(event, { decision: option }, click.currentTarget);
        } }));
    }
    card.append(row);
    return card;
  }

  // A question: each of its questions with its choices (one, or several where it takes them)
  // and, unless it says otherwise, a field for an answer of one's own; Answer sends the chosen
  // labels or the typed text for each question, in order; Dismiss declines it.
  function questionForm(event, card, where) {
    const data = event.data || {};
    const prefix = "q-" + where + "-" + String(data.id).replace(/[^\w-]/g, "_");
    const form = el("form", { class: "question-form", "data-question-form": "" });
    data.questions.forEach((question, index) => {
      const name = prefix + "-" + index;
      const multiple = question.multiple === true;
      const set = el("fieldset", { class: "question" },
        el("legend", {}, question.header ? el("strong", { text: question.header + ": " }) : null, question.question || "Question " + (index + 1)));
      for (const option of Array.isArray(question.options) ? question.options : []) {
        const label = String(option.label || "");
        set.append(el("label", { class: "choice" },
          el("input", { type: multiple ? "checkbox" : "radio", name, value: label, "data-question": index }),
          el("span", {}, el("span", { class: "choice-label", text: label }),
            option.description ? el("span", { class: "muted", text: " — " + option.description }) : null)));
      }
      if (question.custom !== false) {
        set.append(el("label", { for: name + "-own", class: "own-label", text: "Or your own answer" }),
          el("input", { id: name + "-own", type: "text", autocomplete: "off", "data-question-own": index }));
      }
      form.append(set);
    });
    const problem = el("p", { class: "question-problem", role: "alert" });
    form.append(problem, el("div", { class: "row" },
      el("button", { type: "submit", class: "primary", "data-question-action": "answer", text: "Answer" }),
      el("button", { type: "button", "data-question-action": "dismiss", text: "Dismiss",
        onclick: (click) => answer(event, { decision: "decline" }, click.currentTarget) })));
    form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      const answers = data.questions.map((_, index) => {
        const chosen = [...form.querySelectorAll('input[data-question="' + index + '"]:checked')].map((i) => i.value);
        const own = form.querySelector('input[data-question-own="' + index + '"]');
        if (own && own.value.trim()) chosen.push(own.value.trim());
        return chosen;
      });
      const missing = answers.findIndex((a) => !a.length);
      if (missing >= 0) { problem.textContent = "Question " + (missing + 1) + " has no answer yet."; return; }
      problem.textContent = "";
      answer(event, { decision: "accept", answers }, form.querySelector("button[type=submit]"));
    });
    return form;
  }

  // "Accept with amendment": the command to allow instead, in its own input inside the card.
  function toggleAmendment(event, card, button) {
    const open = card.querySelector(".amendment");
    if (open) { open.remove(); button.setAttribute("aria-expanded", "false"); return; }
    button.setAttribute("aria-expanded", "true");
    const data = event.data || {};
    const id = "amend-" + Math.random().toString(36).slice(2);
    const form = el("form", { class: "amendment" },
      el("label", { for: id, text: "The command to allow instead (words separated by spaces)" }),
      el("input", { id, type: "text", autocomplete: "off", spellcheck: "false", required: true,
        value: Array.isArray(data.proposed_amendment) ? data.proposed_amendment.join(" ") : data.command || "" }),
      el("div", { class: "row" }, el("button", { type: "submit", text: "Accept this command" }),
        el("button", { type: "button", text: "Cancel", onclick: () => toggleAmendment(event, card, button) })));
    form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      const argv = form.querySelector("input").value.split(/\s+/).filter(Boolean);
      if (!argv.length) return;
      answer(event, { decision: "accept_with_amendment", amendment: argv }, form.querySelector("button[type=submit]"));
    });
    card.querySelector(".decisions").after(form);
    form.querySelector("input").focus();
  }

  function addApproval(event, live) {
    const data = event.data || {};
    if (!data.id || state.approvals.has(data.id)) return;
    state.approvals.set(data.id, event);
    $("approval-list").append(approvalCard(event, "list"));
    renderApprovalCount();
    if (live) notifyApproval(event);
  }

  // In the open session, after the message that led to it (the newest one when it arrives).
  function placeApproval(event) {
    const data = event.data || {};
    if (!data.id || !state.approvals.has(data.id) || state.pending) return;
    if (!state.open || !sameOpen(event.profile, approvalSession(event))) return;
    if ($("transcript").querySelector('[data-approval-id="' + CSS.escape(data.id) + '"]')) return;
    $("transcript").append(approvalCard(state.approvals.get(data.id), "session"));
  }

  function removeApproval(id) {
    if (!id || !state.approvals.has(id)) return;
    state.approvals.delete(id);
    for (const card of document.querySelectorAll('[data-approval-id="' + CSS.escape(id) + '"]')) card.remove();
    renderApprovalCount();
    closeNotification(id);
  }

  function renderApprovalCount() {
    const count = state.approvals.size;
    $("approvals-count").textContent = String(count);
    $("approvals-button").setAttribute("aria-label", "Pending approvals: " + count);
    $("approvals-empty").hidden = count > 0;
  }

  async function answer(event, body, button) {
    const data = event.data || {};
    const card = button.closest("[data-approval-id]");
    const buttons = card ? card.querySelectorAll("button") : [button];
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

  // ---- Browser notifications for new approvals (through the service worker) ----------------

  function offerNotifications() {
    $("notify-offer").hidden = !("Notification" in window) || Notification.permission !== "default" || !state.worker;
  }

  async function askNotifications() {
    try { await Notification.requestPermission(); } catch (_) { /* the browser said no */ }
    offerNotifications();
  }

  async function notifyApproval(event) {
    if (!("Notification" in window) || Notification.permission !== "granted" || !state.worker) return;
    const data = event.data || {};
    const session = approvalSession(event);
    try {
      await state.worker.showNotification("Approval: " + (data.title || word(approvalKindWords, data.kind) || "request"), {
        body: [data.command, data.reason, event.profile + " · " + sessionTitle(event.profile, session)].filter(Boolean).join("\n"),
        tag: data.id, icon: "icon-192.png", requireInteraction: true,
        data: { url: location.pathname + location.search + sessionHash(event.profile, session) },
      });
    } catch (_) { /* no notification: the card is on the page */ }
  }

  async function closeNotification(id) {
    if (!state.worker || !state.worker.getNotifications) return;
    try { for (const n of await state.worker.getNotifications({ tag: id })) n.close(); } catch (_) { /* none */ }
  }

  async function registerWorker() {
    if (!("serviceWorker" in navigator)) return;
    try {
      await navigator.serviceWorker.register("sw.js");
      state.worker = await navigator.serviceWorker.ready;
      offerNotifications();
    } catch (_) { /* not installable here (e.g. plain http on a LAN address): the page works without */ }
  }

  // ---- Notifications of a notification profile -------------------------------------------

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
      el("span", { class: "muted" }, (item.read ? "read" : "unread") + (item.priority ? " · " + item.priority : ""),
        item.created_at ? " · " : null, timeEl(item.created_at)));
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

  document.addEventListener("DOMContentLoaded", async () => {
    show("home");
    $("login-form").addEventListener("submit", login);
    $("logout").addEventListener("click", logout);
    $("notify-button").addEventListener("click", askNotifications);
    $("approvals-button").addEventListener("click", () => {
      // Beside an open session (a wide screen) the list is on screen: it scrolls, the session stays.
      const listShown = $("side").getClientRects().length > 0;
      if ((state.open || state.notifications) && !listShown) go("#/approvals");
      else if (state.open || state.notifications) $("side").scrollTo({ top: 0, behavior: "smooth" });
      else $("approvals").scrollIntoView({ behavior: "smooth", block: "start" });
    });
    $("back").addEventListener("click", back);
    $("read-all").addEventListener("click", readAll);
    $("prompt-form").addEventListener("submit", sendPrompt);
    $("abort").addEventListener("click", abortTurn);
    window.addEventListener("hashchange", route);
    // Back from sleep: a stream the browser gave up on is reopened from the last id.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && state.loggedIn && (!state.source || state.source.readyState === EventSource.CLOSED)) openStream();
    });
    window.addEventListener("online", () => {
      if (state.loggedIn && (!state.source || state.source.readyState === EventSource.CLOSED)) openStream();
    });
    window.addEventListener("offline", () => offline(true));
    setInterval(refreshAges, 30000);
    registerWorker();
    await pairFromLink();
    start();
  });
})();
