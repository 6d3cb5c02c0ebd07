// Progressive enhancement only: every control here also works as a plain link or form.
(function () {
  "use strict";
  // Close the application switcher with Escape (focus back on its toggle), when
  // clicking elsewhere, and when focus moves out of it (tabbing past it left it
  // open over the page).
  function openSwitchers() { return document.querySelectorAll("details.switcher[open]"); }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    openSwitchers().forEach(function (d) {
      var inside = d.contains(document.activeElement);
      d.open = false;
      if (inside) { d.querySelector("summary").focus(); }
    });
  });
  document.addEventListener("click", function (event) {
    openSwitchers().forEach(function (d) {
      if (!d.contains(event.target)) { d.open = false; }
    });
  });
  document.addEventListener("focusout", function (event) {
    var d = event.target.closest ? event.target.closest("details.switcher[open]") : null;
    if (d && event.relatedTarget && !d.contains(event.relatedTarget)) { d.open = false; }
  });

  // htmx puts focus back on the element with the focused one's id after a swap.
  // When that element is gone (a decision replaced its buttons), focus would fall
  // to the page's start: move it to the swapped part's marked heading instead.
  document.addEventListener("htmx:afterSettle", function (event) {
    var active = document.activeElement;
    if (active && active !== document.body) { return; }
    var target = event.detail && event.detail.target;
    var swapped = target && target.id ? document.getElementById(target.id) : null;
    var heading = swapped ? swapped.querySelector("[data-focus-after-swap]") : null;
    if (heading) { heading.focus(); }
  });

  // A message shown with the page (after a form post and its redirect) is part of
  // the page as loaded, which screen readers do not announce: say it again in a
  // live region once the page has loaded.
  document.addEventListener("DOMContentLoaded", function () {
    var announcer = document.getElementById("announcer");
    var shown = document.querySelectorAll(".messages .message");
    if (!announcer || !shown.length) { return; }
    var text = Array.prototype.map.call(shown, function (m) { return m.textContent.trim(); }).join(" ");
    window.setTimeout(function () { announcer.textContent = text; }, 250);
  });
})();
