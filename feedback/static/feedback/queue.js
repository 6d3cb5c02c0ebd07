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

  function toggleHelp() {
    var dialog = help();
    if (!dialog) { return; }
    if (dialog.open) { dialog.close(); } else { dialog.showModal(); }
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
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
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

  // Mark the open flag's row after htmx swaps the detail pane.
  document.addEventListener("htmx:afterSwap", function () {
    var detail = document.querySelector("#detail [data-flag-id]");
    var current = detail ? detail.getAttribute("data-flag-id") : null;
    document.querySelectorAll("#queue-rows tr[data-flag-id]").forEach(function (row) {
      row.setAttribute("aria-selected", row.getAttribute("data-flag-id") === current ? "true" : "false");
    });
  });
})();
