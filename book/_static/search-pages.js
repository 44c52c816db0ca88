/* The book's search opened from files (analysis_utils/publish/booksearch.py, issue 53).
   Loaded on the search page only, after BOOK_PAGES (_static/search-pages-data.js: each page's
   headline, whether it is a chapter of the table of contents, and its text) and before
   Sphinx's searchtools.js, which keeps a Scorer defined here.

   Snippets: Sphinx writes a result's snippet from the page fetched over HTTP, which a browser
   refuses for a file; this writes it from BOOK_PAGES instead, much the same way (from 120
   characters before the first query word as typed, else its stem, 240 in all), under every
   result Sphinx lists.

   Ranking: a page whose headline (its title and keywords) holds every query term ranks above
   every other result, a chapter before a page outside the table of contents; within each
   group Sphinx's own score and order stand. */
"use strict";

var BOOK_SEARCH = {
  query: null,  // the query whose terms are below
  terms: new Set(),  // stemmed, as the index holds them
  words: new Set(),  // as typed, lower case
  headlines: new Map(),  // docname -> Set of its headline's stemmed terms
};

/* the query's terms, from Sphinx's own parser (stemmer, stop words); used where a search ran
   before the hook below was in place */
const _bookParse = (query) => {
  if (query !== BOOK_SEARCH.query) {
    const parsed = Search._parseQuery(query);
    BOOK_SEARCH.query = query;
    BOOK_SEARCH.terms = parsed[1];
    BOOK_SEARCH.words = parsed[3];
  }
};

const _bookHeadline = (docname) => {
  if (!BOOK_SEARCH.headlines.has(docname)) {
    const page = BOOK_PAGES[docname];
    const terms = new Set();
    if (page) {
      const stemmer = new Stemmer();
      splitQuery(page.h.toLowerCase()).forEach((w) => {
        if (!stopwords.has(w)) terms.add(stemmer.stemWord(w));
      });
    }
    BOOK_SEARCH.headlines.set(docname, terms);
  }
  return BOOK_SEARCH.headlines.get(docname);
};

var Scorer = {
  // Sphinx's defaults (searchtools.js), unchanged
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
  // added to a result whose page's headline holds every query term, twice for a chapter:
  // above anything Sphinx scores
  headline: 1000,
  score: (result) => {
    const [docname, , , , score] = result;
    if (BOOK_SEARCH.query === null)
      _bookParse(new URLSearchParams(window.location.search).get("q") || "");
    const terms = BOOK_SEARCH.terms;
    const page = BOOK_PAGES[docname];
    if (!page || !terms.size) return score;
    const headline = _bookHeadline(docname);
    if (![...terms].every((t) => headline.has(t))) return score;
    return score + (page.c ? 2 : 1) * Scorer.headline;
  },
};

/* a <p class="context"> with the page text around the first query word, words highlighted */
const _bookSnippet = (docname) => {
  const page = BOOK_PAGES[docname];
  if (!page || !page.t) return null;
  const text = page.t;
  const lower = text.toLowerCase();
  const keys = [...BOOK_SEARCH.words, ...BOOK_SEARCH.terms].filter((k) => k);
  // the first query word as typed, else the first of its stems ("corefer" in "coreferent")
  const at = (ks) => ks.map((k) => lower.indexOf(k)).filter((i) => i > -1);
  const found = at([...BOOK_SEARCH.words]).length ? at([...BOOK_SEARCH.words]) : at(keys);
  const first = found.length ? Math.min(...found) : 0;
  const start = Math.max(first - 120, 0);
  const shown = (start ? "..." : "") + text.substr(start, 240).trim()
    + (start + 240 < text.length ? "..." : "");
  const p = document.createElement("p");
  p.classList.add("context");
  const escaped = [...keys].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+\-?^${}()|[\]\\]/g, "\\$&"));
  const parts = escaped.length
    ? shown.split(new RegExp(`(${escaped.join("|")})`, "gi")) : [shown];
  parts.forEach((part, i) => {
    if (i % 2) {
      const span = p.appendChild(document.createElement("span"));
      span.classList.add("highlighted");
      span.textContent = part;
    } else if (part) p.appendChild(document.createTextNode(part));
  });
  return p;
};

const _bookDocname = (href) => {
  const suffix = DOCUMENTATION_OPTIONS.LINK_SUFFIX || ".html";
  const path = decodeURI(href.split("#")[0]);
  return path.endsWith(suffix) ? path.slice(0, -suffix.length) : path;
};

const _bookAddSnippets = (root) => {
  root.querySelectorAll("ul.search > li").forEach((li) => {
    if (li.querySelector("p.context")) return;
    const a = li.querySelector("a");
    const snippet = a && _bookSnippet(_bookDocname(a.getAttribute("href")));
    if (snippet) li.appendChild(snippet);
  });
};

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined" || typeof BOOK_PAGES === "undefined") return;
  // every query Sphinx runs passes here first: keep its terms for the scorer and snippets
  const parse = Search._parseQuery;
  Search._parseQuery = (query) => {
    const parsed = parse(query);
    BOOK_SEARCH.query = query;
    BOOK_SEARCH.terms = parsed[1];
    BOOK_SEARCH.words = parsed[3];
    return parsed;
  };
  const results = document.getElementById("search-results");
  if (!results) return;
  new MutationObserver(() => _bookAddSnippets(results))
    .observe(results, { childList: true, subtree: true });
});
