/**
 * The namespace-aware view of an element that the SOAP reader works on, built the same way by
 * both readers of a request: the one-pass reader (fast-envelope.ts) and the general one over
 * fast-xml-parser's output (read-soap.ts).
 */
export interface Element {
  readonly ns: string;
  readonly local: string;
  /** The value of the attribute `{ns}local`; unprefixed attributes have no namespace. */
  attr(ns: string, local: string): string | undefined;
  children(): IterableIterator<Element>;
  /** The element's own text and CDATA, concatenated. */
  text(): string;
}

/** Namespace prefixes in scope ('' is the default namespace). */
export interface Scope {
  get(prefix: string): string | undefined;
}
export const ROOT_SCOPE: Scope = new Map([['xml', 'http://www.w3.org/XML/1998/namespace']]);

class DeclaredScope implements Scope {
  constructor(
    private readonly declared: ReadonlyMap<string, string>,
    private readonly parent: Scope,
  ) {}

  get(prefix: string): string | undefined {
    // An element's own declaration wins, `xmlns=""` (undeclaring the default namespace) included.
    return this.declared.get(prefix) ?? this.parent.get(prefix);
  }
}

/**
 * The scope inside an element: its own xmlns declarations, then its parent's scope. Chained, not
 * copied: copying the parent's declarations into every element that declares one made a message
 * with many declarations on the root cost their number times its elements.
 */
export function scopeOf(attrs: readonly (readonly [string, string])[], parentScope: Scope): Scope {
  let declared: Map<string, string> | undefined;
  for (const [attrName, value] of attrs) {
    if (attrName === 'xmlns' || attrName.startsWith('xmlns:')) {
      declared ??= new Map();
      declared.set(attrName === 'xmlns' ? '' : attrName.slice(6), value);
    }
  }
  return declared ? new DeclaredScope(declared, parentScope) : parentScope;
}

/** The view of an element named `name` with `attrs` (in document order), in `scope` (scopeOf). */
export function elementView(
  name: string,
  attrs: readonly (readonly [string, string])[],
  scope: Scope,
  children: () => IterableIterator<Element>,
  text: () => string,
): Element {
  const colon = name.indexOf(':');
  const prefix = colon === -1 ? '' : name.slice(0, colon);
  return {
    ns: scope.get(prefix) ?? '',
    local: colon === -1 ? name : name.slice(colon + 1),
    attr(ns, local) {
      for (const [attrName, value] of attrs) {
        const c = attrName.indexOf(':');
        const attrLocal = c === -1 ? attrName : attrName.slice(c + 1);
        if (attrLocal !== local || attrName.startsWith('xmlns')) continue;
        const attrNs = c === -1 ? '' : (scope.get(attrName.slice(0, c)) ?? '');
        if (attrNs === ns) return value;
      }
      return undefined;
    },
    children,
    text,
  };
}
