// pastchats ui: keyboard shortcuts, nothing else. Every page works without this file.
// "/" puts the cursor in the search field; "j" and "k" move to the next and previous chat or message.
(function () {
  "use strict";
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function stops() {
    return Array.prototype.slice.call(document.querySelectorAll("section.chat h2 a, article.msg"));
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
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
