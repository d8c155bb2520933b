// Sluice review console: keyboard-first moderation. No framework, no build step; loaded with `defer`
// (the Content-Security-Policy allows no inline script).
(function () {
  "use strict";
  var cards = Array.prototype.slice.call(document.querySelectorAll("article.card[data-item-id]"));
  var index = -1;

  function focusCard(i) {
    if (!cards.length) { return; }
    index = Math.max(0, Math.min(cards.length - 1, i));
    cards.forEach(function (card, n) { card.classList.toggle("focused", n === index); });
    cards[index].focus({ preventScroll: true });
    cards[index].scrollIntoView({ block: "nearest" });
  }

  function current() { return index >= 0 ? cards[index] : null; }

  function act(action) {
    var card = current();
    if (!card) { return; }
    var button = card.querySelector('button[data-action="' + action + '"]');
    if (button) { button.click(); }
  }

  // Reveal or blur an image: click or hold on it, or `r`.
  document.querySelectorAll("img[data-reveal]").forEach(function (img) {
    img.addEventListener("click", function () { img.classList.toggle("revealed"); });
  });

  // Grayscale beside blur, remembered in this browser.
  if (window.localStorage && localStorage.getItem("sluice.grayscale") === "1") { document.body.classList.add("grayscale"); }
  document.querySelectorAll("[data-toggle-gray]").forEach(function (button) {
    button.addEventListener("click", function () {
      var on = document.body.classList.toggle("grayscale");
      if (window.localStorage) { localStorage.setItem("sluice.grayscale", on ? "1" : "0"); }
    });
  });

  // Focus the item the server named (the next one after a decision), else the first.
  var wanted = new URLSearchParams(window.location.search).get("focus");
  var start = 0;
  if (wanted) {
    cards.forEach(function (card, n) { if (card.getAttribute("data-item-id") === wanted) { start = n; } });
  }
  if (cards.length) { focusCard(start); }
  cards.forEach(function (card, n) {
    card.addEventListener("click", function () { if (index !== n) { focusCard(n); } });
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) {
      if (event.key === "Escape") { target.blur(); }
      return;
    }
    var card = current();
    switch (event.key) {
      case "j": focusCard(index + 1); break;
      case "k": focusCard(index - 1); break;
      case "a": act("approve"); break;
      case "b": act("block"); break;
      case "e": act("escalate"); break;
      case "x":
        if (card) { var box = card.querySelector('input[type="checkbox"]'); if (box) { box.checked = !box.checked; } }
        break;
      case "r":
        if (card) { var img = card.querySelector("img[data-reveal]"); if (img) { img.classList.toggle("revealed"); } }
        break;
      case "o": case "Enter":
        if (card && card.getAttribute("data-href")) { window.location.href = card.getAttribute("data-href"); }
        break;
      case "?":
        var dialog = document.getElementById("keys");
        if (dialog && dialog.showModal) { dialog.open ? dialog.close() : dialog.showModal(); }
        break;
      default: return;
    }
    event.preventDefault();
  });
})();
