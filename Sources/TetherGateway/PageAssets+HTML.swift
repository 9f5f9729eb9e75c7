extension PageAssets {
    /// The page's only HTML: the login form and the main view's frame; app.js fills the rest.
    /// No inline script or style, so the Content-Security-Policy can stay `'self'` only.
    static let html = ##"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Tether</title>
<link rel="icon" href="icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<section id="login" hidden>
  <h1>Tether</h1>
  <form id="login-form">
    <label for="login-token">Gateway token</label>
    <input id="login-token" name="token" type="password" autocomplete="current-password" required>
    <button type="submit" id="login-submit">Log in</button>
  </form>
  <p id="login-error" role="alert"></p>
</section>
<div id="app" hidden>
  <header id="bar">
    <h1>Tether</h1>
    <span id="stream-state" role="status">Connecting…</span>
    <button type="button" id="approvals-button" aria-label="Pending approvals: 0">Approvals <span id="approvals-count">0</span></button>
    <button type="button" id="logout">Log out</button>
  </header>
  <main>
    <p id="notice" role="alert"></p>
    <section id="approvals" aria-labelledby="approvals-heading">
      <h2 id="approvals-heading">Pending approvals</h2>
      <p id="approvals-empty">Nothing is waiting for you.</p>
      <div id="approval-list"></div>
    </section>
    <section id="home" aria-labelledby="profiles-heading">
      <h2 id="profiles-heading">Profiles</h2>
      <div id="profile-list"></div>
    </section>
    <section id="session-view" hidden>
      <button type="button" id="back" class="back">‹ Profiles</button>
      <h2 id="session-title"></h2>
      <p id="session-meta"></p>
      <div id="transcript" aria-live="polite"></div>
      <div id="plan" hidden></div>
      <p id="usage" hidden></p>
      <form id="prompt-form">
        <label for="prompt">Prompt</label>
        <textarea id="prompt" name="prompt" rows="3" required></textarea>
        <div class="row">
          <button type="submit" id="send">Send</button>
          <button type="button" id="abort">Abort</button>
        </div>
      </form>
    </section>
    <section id="notification-view" hidden>
      <button type="button" id="notifications-back" class="back">‹ Profiles</button>
      <h2 id="notifications-title">Notifications</h2>
      <button type="button" id="read-all">Mark all read</button>
      <ul id="notification-list"></ul>
    </section>
  </main>
</div>
</body>
</html>
"""##

    /// The page's icon: a tether's two ends and the line between them.
    static let icon = ##"""
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#1f4e79"/><circle cx="20" cy="44" r="8" fill="none" stroke="#fff" stroke-width="5"/><circle cx="44" cy="20" r="8" fill="none" stroke="#fff" stroke-width="5"/><path d="M26 38 38 26" stroke="#fff" stroke-width="5" stroke-linecap="round"/></svg>
"""##
}
