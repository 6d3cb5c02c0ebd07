// Keyboard shortcuts for the triage queue. Progressive enhancement only: every
// key maps to a link or a form button that also works without JavaScript.
(function () {
  "use strict";

  function typing(target) {
    if (!target) { return false; }
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function help() { return document.getElementById("keys-help"); }

  // Single-key shortcuts can be turned off (a stray key or speech input must not
  // decide a flag); the choice is kept in this browser.
  var STORE = "curator.queue-keys";
  function keysOn() {
    try { return window.localStorage.getItem(STORE) !== "off"; } catch (e) { return true; }
  }
  function setKeys(on) {
    try { window.localStorage.setItem(STORE, on ? "on" : "off"); } catch (e) { /* not kept */ }
  }

  function toggleHelp() {
    var dialog = help();
    if (!dialog) { return; }
    if (dialog.open) { dialog.close(); } else { dialog.showModal(); }
  }

  // A refused decision (a conflict, a form error) is answered at the form's /review/
  // address; the address bar shows the flag's own page instead, so a reload or a
  // shared link opens the flag rather than offering to post the old decision again.
  var shown = document.querySelector("[data-shown-url]");
  if (shown && window.history.replaceState) {
    window.history.replaceState(window.history.state, "", shown.getAttribute("data-shown-url"));
  }

  function firstRowLink() {
    return document.querySelector("#queue-rows a[data-row-link]");
  }

  function activate(key) {
    var detail = document.getElementById("detail");
    var target = detail ? detail.querySelector('[data-key="' + key + '"]') : null;
    if (!target && (key === "j" || key === "k")) {
      target = firstRowLink();
    }
    if (!target) { return false; }
    if (target.tagName === "BUTTON") {
      // requestSubmit runs the form's validation, exactly like a click.
      target.form.requestSubmit(target);
    } else {
      target.click();
    }
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target) || !keysOn()) { return; }
    if (event.key === "?") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    if (help() && help().open) { return; }
    if (["j", "k", "a", "r"].indexOf(event.key) !== -1 && activate(event.key)) {
      event.preventDefault();
    }
  });

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest ? event.target.closest("[data-keys-toggle]") : null;
    if (toggle) { toggleHelp(); }
  });

  document.addEventListener("change", function (event) {
    if (event.target.id === "keys-enabled") { setKeys(event.target.checked); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("keys-enabled");
    if (box) { box.checked = keysOn(); }
    // After a decision the page comes back with its message and the next flag:
    // keyboard users continue from that flag, not from the top of the page.
    var title = document.getElementById("flag-title");
    if (title && document.querySelector(".messages .message")) { title.focus(); }
  });

  // Mark the open flag's row (colour for the eye, aria-current for screen readers)
  // after htmx swaps the detail pane.
  document.addEventListener("htmx:afterSwap", function () {
    var detail = document.querySelector("#detail [data-flag-id]");
    var current = detail ? detail.getAttribute("data-flag-id") : null;
    document.querySelectorAll("#queue-rows tr[data-flag-id]").forEach(function (row) {
      var open = row.getAttribute("data-flag-id") === current;
      var link = row.querySelector("a[data-row-link]");
      row.setAttribute("aria-selected", open ? "true" : "false");
      if (!link) { return; }
      if (open) { link.setAttribute("aria-current", "true"); } else { link.removeAttribute("aria-current"); }
    });
  });
})();
