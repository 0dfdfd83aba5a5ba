// Sign-in for `rxreact serve --token-file`: the page asks for the token once, keeps it in this
// browser and sends it with every request to its own server. A server without tokens never
// answers 401, so nothing is ever asked (`rxreact serve --demo` on loopback).
//
// The token is kept in localStorage (this origin's alone: another port of the same host cannot
// read it) and every fetch to this server carries it as `Authorization: Bearer`; no cookie
// holds it, so the marble diagram is fetched too (draw.js), not loaded by an <img src>.
(() => {
  'use strict';
  const STORE = 'rxreact.token';
  let token = localStorage.getItem(STORE);

  function keep(value) {
    token = value;
    localStorage.setItem(STORE, value);
  }

  function ask() {
    const value = window.prompt('Access token for this rxreact server');
    if (value && value.trim()) keep(value.trim());
  }

  function withToken(input, init) {
    if (!token) return init;
    const headers = new Headers((init && init.headers) || (input instanceof Request ? input.headers : undefined));
    headers.set('Authorization', `Bearer ${token}`);
    return { ...init, headers };
  }

  const plainFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if (url.origin !== location.origin) return plainFetch(input, init);
    const sent = token;
    const response = await plainFetch(input, withToken(input, init));
    if (response.status !== 401) return response;
    // Another request may have asked meanwhile (prompt blocks): ask only if nobody did.
    if (token === sent) ask();
    return token && token !== sent ? plainFetch(input, withToken(input, init)) : response;
  };

  // The cookie earlier versions kept the token in: gone, so no other app on this host reads it.
  document.cookie = 'rxreact_token=; path=/; max-age=0; SameSite=Strict';
  window.rxreactSignedIn = window.fetch('/api/me').then((r) => (r.ok ? r.json() : null));
})();
