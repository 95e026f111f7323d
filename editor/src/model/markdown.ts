/**
 * Markdown of notes, rendered to sanitised HTML. Two layers, because note text comes from
 * whoever edits the shared flow: markdown-it with `html: false` escapes any raw HTML and refuses
 * `javascript:`/`vbscript:`/`data:` links, and DOMPurify then keeps only a small list of tags and
 * attributes and only http(s)/mailto links, which open in a new tab without an opener.
 * Loaded on demand (a flow without notes never downloads it).
 */
import DOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });

const TAGS = [
  'p',
  'br',
  'strong',
  'em',
  's',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'a',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
];

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/** The note's Markdown as HTML that carries no script, no raw HTML and no unsafe link. */
export function renderMarkdown(text: string): string {
  return purify.sanitize(md.render(text), {
    ALLOWED_TAGS: TAGS,
    ALLOWED_ATTR: ['href', 'title', 'target', 'rel'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  });
}
