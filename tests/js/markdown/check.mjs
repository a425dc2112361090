// Test-only (src/report/safe_output_test.cc): renders Markdown files with markdown-it as
// GitHub-flavoured Markdown would (CommonMark, tables, strikethrough, raw HTML passed
// through) and reports what elements came out, so the test can find injected ones.
// Link validation is switched off: markdown-it refuses javascript: links by itself,
// and the test must see such a link if the Markdown made one.
//
// Usage: node check.mjs IN.md... > OUT.json
// Output: one object per input: {headings: [{tag, text}], html: [raw HTML tokens],
// links: [hrefs], images: [srcs], code: [code spans and blocks], tables: [[cells per
// row]], text: the visible text, a line per block}.
import fs from 'node:fs';
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: true, linkify: false });
md.validateLink = () => true;

function inspect(src) {
  const out = { headings: [], html: [], links: [], images: [], code: [], tables: [], text: [] };
  const tokens = md.parse(src, {});
  let heading = null;
  let table = null;
  let row = null;
  const walk = (list) => {
    for (const t of list) {
      if (t.type === 'heading_open') heading = { tag: t.tag, text: '' };
      else if (t.type === 'heading_close') { out.headings.push(heading); heading = null; }
      else if (t.type === 'html_block' || t.type === 'html_inline') out.html.push(t.content);
      else if (t.type === 'link_open') out.links.push(t.attrGet('href'));
      else if (t.type === 'image') out.images.push(t.attrGet('src'));
      else if (t.type === 'code_inline' || t.type === 'code_block' || t.type === 'fence') out.code.push(t.content);
      else if (t.type === 'table_open') table = [];
      else if (t.type === 'table_close') { out.tables.push(table); table = null; }
      else if (t.type === 'tr_open') row = 0;
      else if (t.type === 'tr_close') { table.push(row); row = null; }
      else if (t.type === 'th_open' || t.type === 'td_open') row += 1;
      else if (t.type === 'text') {
        out.text[out.text.length - 1] += t.content;
        if (heading) heading.text += t.content;
      } else if (t.type === 'softbreak' || t.type === 'hardbreak') out.text[out.text.length - 1] += ' ';
      if (t.children) {
        out.text.push('');  // one line of text per inline block
        walk(t.children);
      }
    }
  };
  walk(tokens);
  out.text = out.text.join('\n');
  out.rendered = md.render(src);
  return out;
}

const results = process.argv.slice(2).map((f) => inspect(fs.readFileSync(f, 'utf8')));
process.stdout.write(JSON.stringify(results));
