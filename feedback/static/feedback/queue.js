// Keyboard shortcuts and in-place decisions for the triage queue. Progressive
// enhancement only: every key maps to a link, a radio button or a form button that
// also works without JavaScript (the forms then post and redirect as usual).
(function () {
  "use strict";

  // Keys are ignored while the curator types; radio buttons and checkboxes are not
  // typing (a chosen verdict keeps its focus and `a` still approves).
  function typing(target) {
    if (!target) { return false; }
    var tag = target.tagName;
    if (tag === "INPUT") {
      var type = (target.getAttribute("type") || "text").toLowerCase();
      return ["radio", "checkbox", "button", "submit", "reset"].indexOf(type) === -1;
    }
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function help() { return document.getElementById("keys-help"); }
  function pane() { return document.getElementById("detail"); }

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
  function showOwnUrl() {
    var shown = document.querySelector("[data-shown-url]");
    if (shown && window.history.replaceState && window.location.pathname.indexOf("/review/") !== -1) {
      window.history.replaceState(window.history.state, "", shown.getAttribute("data-shown-url"));
    }
  }
  showOwnUrl();

  function firstRowLink() {
    return document.querySelector("#queue-rows a[data-row-link]");
  }

  // Human truth is never a default: an approve (or a capture's label) needs a verdict
  // (a label) chosen first. Says so beside the choice, and records nothing.
  function missingChoice(form) {
    var group = form ? form.querySelector("[data-choice]") : null;
    if (!group || group.querySelector("input[type=radio]:checked")) { return false; }
    var message = group.querySelector("[data-choice-message]");
    var what = group.getAttribute("data-choice");
    if (message) {
      message.textContent = what === "verdict"
        ? "Choose a verdict first: 1 for a miss (false negative), 2 for an over-flag (false positive)."
        : "Choose a label first: press its number.";
    }
    group.querySelectorAll("input[type=radio]").forEach(function (radio) { radio.setAttribute("aria-invalid", "true"); });
    return true;
  }

  function cycleAxis(step) {
    var select = pane() ? pane().querySelector("[data-testid=approve-form] select[name=axis]") : null;
    if (!select || !select.options.length) { return false; }
    var n = select.options.length;
    select.selectedIndex = ((select.selectedIndex + step) % n + n) % n;
    select.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }

  var focusTitleAfterSwap = false;

  function activate(key) {
    var detail = pane();
    var target = detail ? detail.querySelector('[data-key="' + key + '"]') : null;
    if (!target && (key === "j" || key === "k")) {
      target = firstRowLink();
    }
    if (!target) { return false; }
    if (target.tagName === "INPUT") {  // a verdict or a label, chosen by its number
      target.click();
      return true;
    }
    if (target.tagName === "BUTTON") {
      if (key === "a" && missingChoice(target.form)) { return true; }
      // A pane swapped in a moment ago may not have had its forms wired up by htmx
      // yet (it does so once the swap is done); a key pressed in between would post the
      // form natively, a full page load. process() wires it now and is a no-op after.
      if (window.htmx) { window.htmx.process(target.form); }
      // requestSubmit runs the form's validation, exactly like a click.
      target.form.requestSubmit(target);
    } else {
      // j and k: the new flag's title takes focus once it is shown.
      focusTitleAfterSwap = true;
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
    if (event.key === "x" || event.key === "X") {
      if (cycleAxis(event.key === "x" ? 1 : -1)) { event.preventDefault(); }
      return;
    }
    if (/^[jkar1-9]$/.test(event.key) && activate(event.key)) {
      event.preventDefault();
    }
  });

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest ? event.target.closest("[data-keys-toggle]") : null;
    if (toggle) { toggleHelp(); return; }
    // A click on Approve / Label without a choice is refused the same way as the key.
    var button = event.target.closest ? event.target.closest("button[data-key=a]") : null;
    if (button && missingChoice(button.form)) { event.preventDefault(); }
  });

  document.addEventListener("change", function (event) {
    if (event.target.id === "keys-enabled") { setKeys(event.target.checked); }
    // A choice made: the refusal beside it goes away.
    var group = event.target.closest ? event.target.closest("[data-choice]") : null;
    if (group && event.target.type === "radio") {
      var message = group.querySelector("[data-choice-message]");
      if (message) { message.textContent = ""; }
      group.querySelectorAll("input[type=radio]").forEach(function (radio) { radio.removeAttribute("aria-invalid"); });
    }
  });

  // The browser's own check (a weight of 5) would point at a field inside a closed
  // section: open the section so the field and its message are seen.
  document.addEventListener("invalid", function (event) {
    var section = event.target.closest ? event.target.closest("details") : null;
    if (section && !section.open) { section.open = true; }
  }, true);

  // After a form error from the server, the first invalid field takes focus (its
  // section is already open); after a decision, the next flag's title does.
  function placeFocus() {
    var detail = pane();
    if (!detail) { return; }
    var invalid = detail.querySelector("[aria-invalid=true]");
    if (invalid) {
      var section = invalid.closest("details");
      if (section) { section.open = true; }
      invalid.focus();
      return;
    }
    var title = detail.querySelector("[data-autofocus]");
    if (title) { title.focus(); }
  }

  // Bulk reject: the button shows only while a row is selected (CSS); its count says how many.
  function bulkCount() {
    var button = document.querySelector("[data-testid=bulk-reject]");
    if (!button) { return; }
    var n = document.querySelectorAll("#queue-rows input[name=ids]:checked").length;
    button.textContent = n ? "Reject " + n + " selected…" : "Reject selected…";
  }
  document.addEventListener("change", function (event) {
    if (event.target.name === "ids") { bulkCount(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("keys-enabled");
    if (box) { box.checked = keysOn(); }
    var confirm = document.querySelector("[data-testid=bulk-confirm] h1");
    if (confirm) { confirm.focus(); return; }
    if (document.querySelector("#detail [aria-invalid=true]")) { placeFocus(); return; }
    // After a decision the page comes back with its message and the next flag:
    // keyboard users continue from that flag, not from the top of the page.
    var title = document.getElementById("flag-title");
    if (title && document.querySelector(".messages .message")) { title.focus(); }
  });

  // The server answers a refused decision with 422 (form errors) or 409 (decided
  // meanwhile) and the pane to show: swap it in like any answer.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if ((status === 409 || status === 422) && event.detail.target && event.detail.target.id === "detail") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
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
    bulkCount();
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "detail") { return; }
    showOwnUrl();
    if (focusTitleAfterSwap) {
      focusTitleAfterSwap = false;
      var title = document.getElementById("flag-title");
      if (title) { title.focus(); return; }
    }
    placeFocus();
  });
})();
