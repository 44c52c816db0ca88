/* Sphinx's search splits a query at every "-", and its index drops numbers, so a head label
   ("3-10") found nothing. The index keeps such labels (book/conf.py, HeadSearch); this keeps
   them whole in the query. searchtools.js defines splitQuery only where none is defined. */
var splitQuery = (query) => {
  const head = /\b\d{1,2}-\d{1,2}\b/g;
  const heads = query.match(head) || [];
  return heads.concat(query.replace(head, " ")
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((term) => term));
};
