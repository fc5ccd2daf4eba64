import type { GroupDef, OperationDef } from '@school/contract';
import { samples, type WireBinding } from './samples.js';
import { escapeXml as esc } from './xml.js';

export const HELP_PAGE_STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafbfc}
header{background:#1f4e79;color:#fff;padding:1rem 2rem}header h1{margin:0;font-size:1.5rem}
main{padding:1rem 2rem;max-width:60rem}a{color:#0b5cad}pre{background:#fff;border:1px solid #d0d7de;
padding:.75rem;overflow:auto;font-size:13px}h2{margin-top:2rem;font-size:1.15rem}
table{border-collapse:collapse}td{padding:.25rem .5rem}input[type=text]{width:20rem;padding:.25rem}
button{padding:.35rem 1rem}.note{color:#57606a}`;

function page(title: string, heading: string, content: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${HELP_PAGE_STYLE}</style></head>
<body><header><h1>${esc(heading)}</h1></header><main>
${content}
</main></body></html>`;
}

/**
 * `GET /X.asmx`: the operations, sorted, with links to their pages and to the WSDL
 * (docs/wire-contract.md#help-pages).
 */
export function renderHelpIndex(group: GroupDef): string {
  const path = group.path;
  const items = [...group.operations]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(
      (op) =>
        `<li><a href="${esc(path)}?op=${encodeURIComponent(op.name)}">${esc(op.name)}</a><br><span class="note">${esc(op.summary)}</span></li>`,
    )
    .join('\n');
  return page(
    `${group.name} Web Service`,
    group.name,
    `<p>${esc(group.title)}. The following operations are supported. For a formal definition, please review the <a href="${esc(path)}?WSDL">Service Description</a>.</p>
<ul>
${items}
</ul>`,
  );
}

const BINDING_TITLES: Record<WireBinding, [string, string]> = {
  soap11: [
    'SOAP 1.1',
    'The following is a sample SOAP 1.1 request and response. The placeholders shown need to be replaced with actual values.',
  ],
  soap12: [
    'SOAP 1.2',
    'The following is a sample SOAP 1.2 request and response. The placeholders shown need to be replaced with actual values.',
  ],
  'http-get': [
    'HTTP GET',
    'The following is a sample HTTP GET request and response. The placeholders shown need to be replaced with actual values.',
  ],
  'http-post': [
    'HTTP POST',
    'The following is a sample HTTP POST request and response. The placeholders shown need to be replaced with actual values.',
  ],
};

/**
 * `GET /X.asmx?op=Op`: samples for all four bindings and a test form over HTTP POST
 * (docs/wire-contract.md#help-pages).
 */
export function renderHelpOperation(
  group: GroupDef,
  op: OperationDef,
  namespace: string,
  host: string,
): string {
  const path = group.path;
  const rows = op.params
    .map(
      (p) =>
        `<tr><td><label for="p-${esc(p.name)}">${esc(p.name)}:</label></td><td><input type="text" id="p-${esc(p.name)}" name="${esc(p.name)}" size="50"></td><td class="note">${esc(p.description)}</td></tr>`,
    )
    .join('\n');
  const all = samples(op, { groupPath: path, namespace, host });
  const sections = (Object.keys(BINDING_TITLES) as WireBinding[])
    .map((b) => {
      const [title, intro] = BINDING_TITLES[b];
      return `<h2>${title}</h2>
<p>${intro}</p>
<pre>${esc(all[b].request)}</pre>
<pre>${esc(all[b].response)}</pre>`;
    })
    .join('\n');
  return page(
    `${group.name} Web Service`,
    group.name,
    `<p>Click <a href="${esc(path)}">here</a> for a complete list of operations.</p>
<h2>${esc(op.name)}</h2>
<p>${esc(op.summary)}</p>
<h2>Test</h2>
<p>To test the operation using the HTTP POST protocol, click the 'Invoke' button.</p>
<form target="_blank" action="${esc(path)}/${esc(op.name)}" method="POST">
<table>
${rows || '<tr><td class="note">This operation takes no parameters.</td></tr>'}
<tr><td></td><td><button type="submit">Invoke</button></td></tr>
</table>
</form>
${sections}`,
  );
}

/** `GET /X.asmx?op=Unknown`: says the method was not found and links back to the list. */
export function renderHelpUnknownOperation(group: GroupDef, name: string): string {
  return page(
    `${group.name} Web Service`,
    group.name,
    `<p>Method '${esc(name)}' was not found in the service ${esc(group.name)}. Operation names are case-sensitive.</p>
<p>Click <a href="${esc(group.path)}">here</a> for a complete list of operations.</p>`,
  );
}
