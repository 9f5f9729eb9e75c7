"use strict";
// The page's service worker: keeps the page's own files so the page opens without the gateway
// (it then says it is offline), and shows the notifications the page asks for. It never caches
// the API: events, sessions and approvals always come from the gateway.
const CACHE = "tether-page-v1";
const FILES = ["./", "app.js", "app.css", "icon.svg", "icon-192.png", "icon-512.png", "manifest.webmanifest"];
const scoped = (file) => new URL(file, self.registration.scope).href;

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES.map(scoped))).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key))))
    .then(() => self.clients.claim()));
});

// The network first, so a new gateway's page is never mixed with an old copy; the copy only
// when the gateway cannot be reached.
self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  url.hash = "";
  const files = FILES.map(scoped);
  const index = files.indexOf(url.href);
  if (index < 0) return;
  event.respondWith(fetch(request).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(files[index], copy));
    }
    return response;
  }).catch(() => caches.match(files[index]).then((cached) => cached || Response.error())));
});

// A tap on an approval's notification opens (or focuses) the page on its session.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = new URL((event.notification.data && event.notification.data.url) || "./", self.registration.scope).href;
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) => {
    for (const client of windows) {
      if (client.url.split("#")[0] === target.split("#")[0] && "focus" in client) {
        return client.navigate(target).then((c) => (c || client).focus());
      }
    }
    return self.clients.openWindow(target);
  }));
});
