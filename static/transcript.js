// KernelBench Hard transcript viewer: chunks loaded while scrolling, search, filters, deep links, copy buttons.
// Chunk and blob files are scripts calling KBT.chunk / KBT.blob (script tags work over http and from file://).
// Both are data: chunk views are built into elements here and blob text is only ever inserted as text.
(function () {
  "use strict";

  var viewer = null;            // one viewer per page
  var pendingBlobs = {};        // key -> [resolve callbacks]
  var blobs = {};               // key -> full text

  function $(root, selector) { return root.querySelector(selector); }
  function all(root, selector) { return Array.prototype.slice.call(root.querySelectorAll(selector)); }
  function pad(n) { var s = String(n); while (s.length < 4) s = "0" + s; return s; }

  function addScript(src, onError) {
    var tag = document.createElement("script");
    tag.src = src;
    tag.async = true;
    tag.onerror = onError;
    document.head.appendChild(tag);
  }

  // ------------------------------------------------------------------------------------------ chunks

  // Chunk k (k >= 1) has a placeholder from the start, so any chunk can be filled on its own: a deep link loads
  // only the chunk it points into, scrolling fills the placeholders that come into view.
  function Viewer(root) {
    this.root = root;
    this.index = JSON.parse($(root, "script.kbt-index").textContent);
    this.events = $(root, ".kbt-events");
    this.sentinel = $(root, ".kbt-sentinel");
    this.slots = [null];
    this.filled = { 0: true };
    this.requested = {};
    this.waiters = [];          // [chunk number, resolve]
    this.hits = [];
    this.current = -1;
    this.query = "";
    this.generation = 0;
    this.searching = false;
    this.pinned = null;         // the event a deep link revealed, until the reader scrolls
    for (var n = 1; n < this.index.chunks.length; n++) {
      var slot = document.createElement("div"), range = this.index.chunks[n];
      slot.className = "kbt-chunk";
      slot.setAttribute("data-n", String(n));
      slot.setAttribute("data-empty", "1");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "kbt-fill";
      button.textContent = "events #" + range[0] + "–#" + range[1] + " are not loaded yet: load them";
      slot.appendChild(button);
      this.events.appendChild(slot);
      this.slots.push(slot);
    }
  }

  Viewer.prototype.total = function () { return this.index.chunks.length; };

  Viewer.prototype.request = function (n) {
    if (n < 1 || n >= this.total() || this.filled[n] || this.requested[n]) return;
    this.requested[n] = true;
    var self = this;
    addScript(this.index.prefix + "c-" + pad(n) + ".js", function () {
      self.requested[n] = false;
      self.status("could not load part " + n + " of the transcript (" + self.index.prefix + "c-" + pad(n) +
                  ".js)");
    });
  };

  // A chunk is an array of pieces, each an array of items (an event's view, after its turn's header).
  Viewer.prototype.receive = function (n, pieces) {
    if (!Array.isArray(pieces) || this.filled[n] || !this.slots[n]) return;
    var slot = this.slots[n], frag = document.createDocumentFragment();
    pieces.forEach(function (items) {
      items.forEach(function (item) { frag.appendChild(renderItem(item)); });
    });
    slot.textContent = "";
    slot.appendChild(frag);
    slot.removeAttribute("data-empty");
    this.filled[n] = true;
    // a chunk that arrives above a revealed event would push it off screen: keep it where the reader was sent
    if (this.pinned && slot.compareDocumentPosition(this.pinned) & Node.DOCUMENT_POSITION_FOLLOWING) {
      this.pinned.scrollIntoView({ block: "center" });
    }
    this.updateSentinel();
    var self = this;
    this.waiters = this.waiters.filter(function (w) {
      if (self.filled[w[0]]) { w[1](); return false; }
      return true;
    });
  };

  // Resolves once chunk n is in the page.
  Viewer.prototype.ensure = function (n) {
    var self = this;
    if (this.filled[n] || n >= this.total()) return Promise.resolve();
    this.request(n);
    return new Promise(function (resolve) { self.waiters.push([n, resolve]); });
  };

  Viewer.prototype.firstEmpty = function () {
    for (var n = 1; n < this.total(); n++) if (!this.filled[n]) return n;
    return -1;
  };

  Viewer.prototype.loadNext = function () {
    var n = this.firstEmpty();
    return n < 0 ? Promise.resolve() : this.ensure(n);
  };

  Viewer.prototype.loadAll = function () {
    var waits = [];
    for (var n = 1; n < this.total(); n++) waits.push(this.ensure(n));
    return Promise.all(waits);
  };

  Viewer.prototype.done = function () { return this.firstEmpty() < 0; };

  Viewer.prototype.updateSentinel = function () {
    if (!this.sentinel) return;
    if (this.done()) {
      this.sentinel.setAttribute("data-done", "1");
      this.sentinel.textContent = "";
      return;
    }
    var left = 0, chunks = this.index.chunks;
    for (var n = 1; n < chunks.length; n++) if (!this.filled[n]) left += chunks[n][1] - chunks[n][0] + 1;
    var button = $(this.sentinel, ".kbt-load");
    if (button) button.textContent = "load more (" + left.toLocaleString() + " events left)";
  };

  Viewer.prototype.status = function (text) {
    var count = $(this.root, ".kbt-count");
    if (count) count.textContent = text;
  };

  // ------------------------------------------------------------------------------------------ views -> elements

  // A chunk holds views (kernelbench/transcripts/render.py documents the keys); these functions build the
  // elements markup.py writes for the first screen. Every text goes in as a text node or an attribute value
  // set through the DOM: nothing from a transcript is ever parsed as markup.
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    return node;
  }

  function textEl(tag, cls, text) {
    var node = el(tag, cls);
    node.textContent = text;
    return node;
  }

  // A text, or a list of texts and [class, text(, title)] spans.
  function appendParts(parent, parts, separator) {
    if (typeof parts === "string") { if (parts) parent.appendChild(document.createTextNode(parts)); return; }
    (parts || []).forEach(function (part, i) {
      if (separator && i) parent.appendChild(document.createTextNode(separator));
      if (typeof part === "string") { if (part) parent.appendChild(document.createTextNode(part)); return; }
      var span = textEl("span", part[0], part[1]);
      if (part.length > 2) span.setAttribute("title", part[2]);
      parent.appendChild(span);
    });
  }

  function renderBody(spec) {
    var box = el("div", "kbt-body"), copy = textEl("button", "kbt-copy", "copy");
    copy.type = "button";
    copy.setAttribute("title", "copy");
    box.appendChild(copy);
    var pre = el("pre", spec[0]);
    if (spec[2] === "diff") colorDiff(pre, spec[1]); else pre.textContent = spec[1];
    box.appendChild(pre);
    if (spec[3] != null) {
      pre.classList.add("is-cut");
      var more = textEl("button", "kbt-more-text", spec[4] || "show all");
      more.type = "button";
      more.setAttribute("data-blob", spec[3]);
      box.appendChild(more);
    }
    return box;
  }

  function renderEvent(view) {
    var form = view.f, node = el(form === "d" ? "details" : "div", view.c), head = node;
    node.id = "e-" + view.i;
    if (form === "d") {
      // after "expand all" / "collapse all", events built from later chunks follow that choice
      var open = viewer && viewer.allOpen !== undefined ? viewer.allOpen : view.o;
      if (open) node.open = true;
      head = node.appendChild(el("summary"));
    } else if (form === "b") {
      head = node.appendChild(el("div", "kbt-h"));
    }
    head.appendChild(textEl("span", "kbt-k", view.k));
    if (form !== "b") {
      head.appendChild(document.createTextNode(" "));
      appendParts(head.appendChild(el("span", "kbt-s")), view.s || "");
    }
    appendParts(head, view.g || []);
    var anchor = textEl("a", "kbt-a", "#" + view.i);
    anchor.setAttribute("href", "#e-" + view.i);
    anchor.setAttribute("title", "link to this event");
    head.appendChild(anchor);
    (view.b || []).forEach(function (spec) { node.appendChild(renderBody(spec)); });
    if (view.e) {
      var sub = node.appendChild(el("div", "kbt-sub"));
      view.e.forEach(function (child) { sub.appendChild(renderItem(child)); });
    }
    return node;
  }

  function renderItem(item) {
    if (item.T == null) return renderEvent(item);
    var turn = el("div", "kbt-turn");
    turn.id = "t-" + item.T;
    turn.appendChild(textEl("strong", "", "Turn " + item.T));
    turn.appendChild(document.createTextNode(" · "));
    appendParts(turn, item.s, " · ");
    return turn;
  }

  // ------------------------------------------------------------------------------------------ blobs

  // A reference is "<pack number>:<key>"; a pack file registers all its texts at once.
  function loadBlob(reference) {
    var match = /^(\d+):([A-Za-z0-9_-]+)$/.exec(reference || "");
    if (!match) return Promise.reject(new Error("bad blob reference"));
    var pack = parseInt(match[1], 10), key = match[2];
    if (blobs.hasOwnProperty(key)) return Promise.resolve(blobs[key]);
    return new Promise(function (resolve, reject) {
      var first = !pendingBlobs[pack];
      (pendingBlobs[pack] = pendingBlobs[pack] || []).push([key, resolve, reject]);
      if (first) addScript(viewer.index.prefix + "b-" + pad(pack) + ".js", function () {
        (pendingBlobs[pack] || []).forEach(function (w) { w[2](new Error("could not load pack " + pack)); });
        delete pendingBlobs[pack];
      });
    });
  }

  // The rest of a long diff, and diffs in chunks, arrive as text: colour their lines with the classes pygments
  // uses (as markup.diff_lines does for the first screen), built as text nodes.
  function colorDiff(pre, text) {
    var lines = text.split("\n");
    if (lines.length > 50000) { pre.textContent = text; pre.classList.remove("hl"); return; }
    var frag = document.createDocumentFragment();
    lines.forEach(function (line, i) {
      var cls = /^(\+\+\+ |--- |Index: )/.test(line) ? "gh" : line[0] === "+" ? "gi" : line[0] === "-" ? "gd" :
                line.slice(0, 2) === "@@" ? "gu" : "";
      var node = document.createTextNode(line + (i < lines.length - 1 ? "\n" : ""));
      if (cls) { var span = document.createElement("span"); span.className = cls; span.appendChild(node); node = span; }
      frag.appendChild(node);
    });
    pre.textContent = "";
    pre.appendChild(frag);
    pre.classList.add("hl");
  }

  // A cut body's whole text: its preview (what the <pre> holds until the body is expanded; search marks and
  // diff colours keep its text) followed by the rest from the blob. Kept per reference, read once.
  var fullTexts = {};           // blob reference -> Promise of the whole text
  var wholeText = {};           // blob reference -> the whole text, once loaded

  function fullText(button) {
    var reference = button.getAttribute("data-blob");
    if (!fullTexts[reference]) {
      var preview = button.parentNode.querySelector("pre").textContent;
      fullTexts[reference] = loadBlob(reference).then(function (rest) {
        wholeText[reference] = preview + rest;
        return wholeText[reference];
      }, function (error) { delete fullTexts[reference]; throw error; });
    }
    return fullTexts[reference];
  }

  var PAGE_CHARS = 1000000;

  function showMore(button) {
    var pre = button.parentNode.querySelector("pre"), shown = parseInt(button.getAttribute("data-shown"), 10);
    var text = wholeText[button.getAttribute("data-blob")];
    var next = Math.min(text.length, shown + PAGE_CHARS);
    pre.appendChild(document.createTextNode(text.slice(shown, next)));
    if (next >= text.length) { button.parentNode.removeChild(button); return; }
    button.setAttribute("data-shown", String(next));
    button.textContent = "show the next " + Math.round(PAGE_CHARS / 1e6) + " MB (" +
                         ((text.length - next) / 1e6).toFixed(1) + " MB more)";
  }

  function expandBody(button) {
    if (button.hasAttribute("data-shown")) { showMore(button); return Promise.resolve(); }
    var pre = button.parentNode.querySelector("pre");
    button.disabled = true;
    button.textContent = "loading…";
    return fullText(button).then(function (text) {
      var shown = Math.min(text.length, PAGE_CHARS);
      if (pre.classList.contains("kbt-diff")) colorDiff(pre, text.slice(0, shown));
      else { pre.textContent = text.slice(0, shown); pre.classList.remove("hl"); }   // text, never markup
      pre.classList.remove("is-cut");
      if (shown >= text.length) { button.parentNode.removeChild(button); return; }
      // a body of many megabytes is laid out a page at a time, so the browser never stalls on it
      button.disabled = false;
      button.setAttribute("data-shown", String(shown));
      button.textContent = "show the next " + Math.round(PAGE_CHARS / 1e6) + " MB (" +
                           ((text.length - shown) / 1e6).toFixed(1) + " MB more)";
    }, function () {
      button.disabled = false;
      button.textContent = "could not load the rest (the page needs its transcript/ folder)";
    });
  }

  // ------------------------------------------------------------------------------------------ reveal / deep links

  function openAncestors(node) {
    for (var el = node; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
      if (el.getAttribute && el.getAttribute("role") === "tabpanel" && el.hidden) {
        var tab = document.querySelector('[role="tab"][aria-controls="' + el.id + '"]');
        if (tab) tab.click(); else el.hidden = false;
      }
    }
  }

  function chunkOf(id) {
    var chunks = viewer.index.chunks;
    for (var i = 0; i < chunks.length; i++) if (id >= chunks[i][0] && id <= chunks[i][1]) return i;
    return -1;
  }

  function reveal(id) {
    var chunk = chunkOf(id);
    if (chunk < 0) return Promise.resolve(false);
    return viewer.ensure(chunk).then(function () {
      var el = document.getElementById("e-" + id);
      if (!el) return false;
      if (getComputedStyle(el).display === "none") setFilter("all");
      openAncestors(el);
      all(document, ".kbt-target").forEach(function (t) { t.classList.remove("kbt-target"); });
      el.classList.add("kbt-target");
      el.scrollIntoView({ block: "center" });
      viewer.pinned = el;
      return true;
    });
  }

  function followHash() {
    var match = /^#e-(\d+)$/.exec(location.hash);
    if (match) reveal(parseInt(match[1], 10));
  }

  // ------------------------------------------------------------------------------------------ search

  function clearMarks() {
    viewer.hits.forEach(function (mark) {
      var parent = mark.parentNode;
      if (!parent) return;
      parent.replaceChild(document.createTextNode(mark.textContent), mark);
      parent.normalize();
    });
    viewer.hits = [];
    viewer.current = -1;
  }

  // Wraps each match under `root` in a <mark>, text nodes split in place (no markup is parsed).
  function markIn(root, query) {
    var needle = query.toLowerCase(), room = 5000 - viewer.hits.length;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentNode;
        if (!parent || parent.closest("button, .kbt-a")) return NodeFilter.FILTER_REJECT;
        return node.nodeValue.toLowerCase().indexOf(needle) >= 0 ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
      }
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (var i = 0; i < nodes.length && room > 0; i++) {
      var node = nodes[i], lower = node.nodeValue.toLowerCase(), at = lower.indexOf(needle), pieces = [];
      while (at >= 0) { pieces.push(at); at = lower.indexOf(needle, at + needle.length); }
      for (var j = pieces.length - 1; j >= 0; j--) {
        var tail = node.splitText(pieces[j]);
        tail.splitText(needle.length);
        var mark = document.createElement("mark");
        mark.className = "kbt-hit";
        tail.parentNode.replaceChild(mark, tail);
        mark.appendChild(tail);
        room -= 1;
      }
    }
  }

  // Hits in document order; the current one keeps its place when later chunks add hits before or after it.
  function refreshHits() {
    var current = viewer.hits[viewer.current];
    viewer.hits = Array.prototype.slice.call(viewer.events.querySelectorAll("mark.kbt-hit"));
    viewer.current = current ? viewer.hits.indexOf(current) : -1;
  }

  function showCount() {
    var hits = viewer.hits, text;
    if (!hits.length) text = viewer.searching ? "searching…" : "no match";
    else text = (viewer.current + 1) + " / " + hits.length + (hits.length >= 5000 ? "+" : "");
    if (hits.length && viewer.searching) text += " so far, searching…";
    viewer.status(text);
  }

  // Searches what is in the page at once, then loads the remaining chunks a few at a time and searches each as
  // it arrives, so that the first matches show immediately and the page stays responsive on huge transcripts.
  function search(query) {
    var generation = ++viewer.generation;      // a newer search makes this one stop
    viewer.query = query;
    viewer.moved = false;
    clearMarks();
    if (!query) { viewer.searching = false; viewer.status(""); return Promise.resolve(); }
    var pending = [];
    for (var n = 1; n < viewer.total(); n++) if (!viewer.filled[n]) pending.push(n);
    viewer.searching = pending.length > 0;
    markIn(viewer.events, query);
    refreshHits();
    if (viewer.hits.length) go(0); else showCount();
    function nextBatch() {
      if (viewer.generation !== generation) return undefined;
      var batch = pending.splice(0, 3);
      if (!batch.length) {
        viewer.searching = false;
        refreshHits();
        if (viewer.hits.length && (viewer.current < 0 || (!viewer.moved && viewer.current !== 0))) go(0);
        else showCount();
        return undefined;
      }
      return Promise.all(batch.map(function (k) { return viewer.ensure(k); })).then(function () {
        if (viewer.generation !== generation) return undefined;
        batch.forEach(function (k) { markIn(viewer.slots[k], query); });
        refreshHits();
        // until the reader moves, the current match is the first one in the transcript
        if (viewer.hits.length && (viewer.current < 0 || (!viewer.moved && viewer.current !== 0))) go(0);
        else showCount();
        return nextBatch();
      });
    }
    return Promise.resolve().then(nextBatch);
  }

  function go(index) {
    var hits = viewer.hits;
    if (!hits.length) return;
    if (viewer.current >= 0 && hits[viewer.current]) hits[viewer.current].classList.remove("cur");
    viewer.current = (index + hits.length) % hits.length;
    var mark = hits[viewer.current];
    mark.classList.add("cur");
    if (getComputedStyle(mark.closest(".ev") || mark).display === "none") setFilter("all");
    openAncestors(mark);
    mark.scrollIntoView({ block: "center" });
    showCount();
  }

  // ------------------------------------------------------------------------------------------ toolbar

  function setFilter(key) {
    viewer.root.setAttribute("data-filter", key);
    all(viewer.root, ".kbt-filters button").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-filter") === key ? "true" : "false");
    });
  }

  function copyText(text, button) {
    function done(ok) {
      var label = button.textContent;
      button.textContent = ok ? "copied" : "copy failed";
      setTimeout(function () { button.textContent = label === "copied" ? "copy" : label; }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallbackCopy(text)); });
    } else {
      done(fallbackCopy(text));
    }
  }

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }

  function onCopy(button) {
    var box = button.parentNode, pre = box.querySelector("pre"), more = box.querySelector(".kbt-more-text");
    if (more) {
      fullText(more).then(function (text) { copyText(text, button); });
    } else {
      copyText(pre.textContent, button);
    }
  }

  function onClick(event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var button = target.closest("button");
    if (button && viewer.root.contains(button)) {
      if (button.classList.contains("kbt-copy")) { event.preventDefault(); onCopy(button); }
      else if (button.classList.contains("kbt-more-text")) { event.preventDefault(); expandBody(button); }
      else if (button.classList.contains("kbt-load")) viewer.loadNext();
      else if (button.classList.contains("kbt-fill")) viewer.ensure(parseInt(button.parentNode.getAttribute("data-n"), 10));
      else if (button.classList.contains("kbt-load-all")) viewer.loadAll();
      else if (button.hasAttribute("data-filter")) setFilter(button.getAttribute("data-filter"));
      else if (button.classList.contains("kbt-next")) { viewer.moved = true; go(viewer.current + 1); }
      else if (button.classList.contains("kbt-prev")) { viewer.moved = true; go(viewer.current - 1); }
      else if (button.classList.contains("kbt-expand")) toggleAll(true);
      else if (button.classList.contains("kbt-collapse")) toggleAll(false);
      return;
    }
    var anchor = target.closest("a.kbt-a");
    if (anchor && viewer.root.contains(anchor)) {
      event.preventDefault();      // a link inside <summary> would also fold the event
      if (history.pushState) history.pushState(null, "", anchor.getAttribute("href"));
      followHash();
    }
  }

  function toggleAll(open) {
    viewer.allOpen = open;
    all(viewer.events, "details").forEach(function (d) { d.open = open; });
  }

  function setupSearch() {
    var input = $(viewer.root, ".kbt-q"), timer = null;
    if (!input) return;
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (input.value.trim() !== viewer.query) search(input.value.trim());
      }, 250);
    });
    input.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") return;
      e.preventDefault();
      clearTimeout(timer);
      var query = input.value.trim();
      if (query !== viewer.query) search(query);
      else { viewer.moved = true; go(viewer.current + (e.shiftKey ? -1 : 1)); }
    });
  }

  // Empty chunk placeholders load when they come near the screen (filters can make whole chunks disappear, which
  // brings the next placeholder into view, which loads it).
  function setupScrolling() {
    if (viewer.done() || !("IntersectionObserver" in window)) return;
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        var n = parseInt(entry.target.getAttribute("data-n"), 10);
        observer.unobserve(entry.target);
        viewer.ensure(n);
      });
    }, { rootMargin: "800px 0px" });
    viewer.slots.forEach(function (slot) { if (slot) observer.observe(slot); });
  }

  function init() {
    var root = document.querySelector(".kbt");
    if (!root || viewer) return;
    viewer = new Viewer(root);
    root.setAttribute("data-filter", "all");
    root.addEventListener("click", onClick);
    setupSearch();
    setupScrolling();
    window.addEventListener("hashchange", followHash);
    ["wheel", "touchmove", "keydown", "mousedown"].forEach(function (type) {
      window.addEventListener(type, function () { viewer.pinned = null; }, { passive: true });
    });
    followHash();
    // when the viewer became usable, from navigation start (read by benchmarks/transcripts_throughput.py)
    root.setAttribute("data-ready", String(Math.round(performance.now())));
  }

  window.KBT = {
    chunk: function (n, pieces) { if (viewer) viewer.receive(n, pieces); },
    blobs: function (pack, texts) {
      Object.keys(texts || {}).forEach(function (key) {
        if (typeof texts[key] === "string") blobs[key] = texts[key];
      });
      (pendingBlobs[pack] || []).forEach(function (w) {
        if (blobs.hasOwnProperty(w[0])) w[1](blobs[w[0]]); else w[2](new Error("missing " + w[0]));
      });
      delete pendingBlobs[pack];
    },
    reveal: function (id) { return reveal(id); },
    search: function (q) { return search(q); }
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
