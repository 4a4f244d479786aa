// pastchats ui: keyboard shortcuts, nothing else. Every page works without this file.
// "/" puts the cursor in the search field; "j" and "k" move to the next and previous chat or message;
// "?" shows or hides the shortcuts (the header's "? shortcuts", which a click opens too); Esc hides them.
// Keys typed into a field are the field's, but for a "?" in the empty search field.
(function () {
  "use strict";
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function stops() {
    var all = document.querySelectorAll("ul.rows a.title, section.chat h3 a, article.msg");
    // Only what is on show: the folded weak results are skipped until opened.
    return Array.prototype.filter.call(all, function (element) {
      return element.getClientRects().length > 0;
    });
  }
  function help(open) {
    var keys = document.getElementById("keys");
    if (!keys) {
      return;
    }
    keys.open = open === undefined ? !keys.open : open;
    if (keys.open) {
      keys.querySelector("summary").focus();
    }
  }
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      help(false);
      return;
    }
    // A "?" typed into the empty search field asks for help too: no search starts with it, and the
    // first page opens with the cursor there.
    var emptySearch = event.target && event.target.name === "q" && !event.target.value;
    if (event.ctrlKey || event.metaKey || event.altKey || (typing(event.target) && !(emptySearch && event.key === "?"))) {
      return;
    }
    if (event.key === "?") {
      event.preventDefault();
      help();
      return;
    }
    if (event.key === "/") {
      var field = document.querySelector("input[name=q]");
      if (field) {
        event.preventDefault();
        field.focus();
        field.select();
      }
      return;
    }
    if (event.key !== "j" && event.key !== "k") {
      return;
    }
    var list = stops();
    if (!list.length) {
      return;
    }
    var at = list.indexOf(document.activeElement);
    var next = event.key === "j" ? Math.min(at + 1, list.length - 1) : Math.max(at - 1, 0);
    if (at === -1) {
      next = 0;
    }
    event.preventDefault();
    if (list[next].tagName === "ARTICLE") {
      list[next].setAttribute("tabindex", "-1");
    }
    list[next].focus();
    list[next].scrollIntoView({ block: "nearest" });
  });
})();
