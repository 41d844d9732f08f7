/**
 * A small TwiML reader for the simulator: enough XML for what our control plane answers
 * (elements, attributes in single or double quotes, self-closing tags, text, the five entities).
 */

export interface TwimlNode {
  name: string;
  attrs: Record<string, string>;
  children: TwimlNode[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decode(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_m, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return ENTITIES[e.toLowerCase()] ?? '';
  });
}

/** Parses a TwiML document and returns its `<Response>` element. Throws on malformed input. */
export function parseTwiml(xml: string): TwimlNode {
  let i = 0;
  const src = xml.replace(/<\?xml[^>]*\?>/g, '').replace(/<!--[\s\S]*?-->/g, '');
  function element(): TwimlNode {
    if (src[i] !== '<') throw new Error(`TwiML: expected < at ${i}`);
    const m = /^<([A-Za-z][\w:.-]*)/.exec(src.slice(i));
    if (!m) throw new Error(`TwiML: bad tag at ${i}`);
    const node: TwimlNode = { name: m[1]!, attrs: {}, children: [], text: '' };
    i += m[0].length;
    for (;;) {
      const ws = /^\s*/.exec(src.slice(i))!;
      i += ws[0].length;
      if (src.startsWith('/>', i)) {
        i += 2;
        return node;
      }
      if (src[i] === '>') {
        i++;
        break;
      }
      const a = /^([\w:.-]+)\s*=\s*("([^"]*)"|'([^']*)')/.exec(src.slice(i));
      if (!a) throw new Error(`TwiML: bad attribute at ${i}`);
      node.attrs[a[1]!] = decode(a[3] ?? a[4] ?? '');
      i += a[0].length;
    }
    for (;;) {
      if (i >= src.length) throw new Error(`TwiML: <${node.name}> not closed`);
      if (src.startsWith('</', i)) {
        const close = /^<\/([\w:.-]+)\s*>/.exec(src.slice(i));
        if (!close || close[1] !== node.name) throw new Error(`TwiML: bad closing tag at ${i}`);
        i += close[0].length;
        node.text = node.text.trim();
        return node;
      }
      if (src[i] === '<') node.children.push(element());
      else {
        const end = src.indexOf('<', i);
        node.text += decode(src.slice(i, end < 0 ? src.length : end));
        i = end < 0 ? src.length : end;
      }
    }
  }
  i = /^\s*/.exec(src)![0].length;
  const root = element();
  if (root.name !== 'Response') throw new Error(`TwiML: root is <${root.name}>, not <Response>`);
  return root;
}

/** The `<Stream>` inside `<Connect>`, with its `<Parameter>`s as customParameters. */
export function streamOf(node: TwimlNode): { url: string; parameters: Record<string, string> } | undefined {
  const stream = node.children.find((c) => c.name === 'Stream');
  if (!stream) return undefined;
  const parameters: Record<string, string> = {};
  for (const p of stream.children) if (p.name === 'Parameter' && p.attrs.name) parameters[p.attrs.name] = p.attrs.value ?? '';
  return { url: stream.attrs.url ?? '', parameters };
}
