import {
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type PrimitiveValueListNode,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
  type ValueNode,
} from 'kysely';

/** U+0000 → U+FFFD in a string (PostgreSQL's text cannot hold NUL; SQLite's can). */
const withoutNul = (value: unknown): unknown =>
  typeof value === 'string' && value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;

class NulTransformer extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    const value = withoutNul(node.value);
    return value === node.value ? super.transformValue(node) : { ...node, value };
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return node.values.some((v) => withoutNul(v) !== v)
      ? { ...node, values: node.values.map(withoutNul) }
      : super.transformPrimitiveValueList(node);
  }
}

/**
 * PostgreSQL refuses a text value holding U+0000 (the whole statement fails), where SQLite keeps
 * it. A request body may hold one, and a call must still be recorded: on PostgreSQL every string
 * a query binds has its NULs replaced by U+FFFD, the character the XML answers already use for
 * what XML cannot carry.
 */
export class NulToReplacementPlugin implements KyselyPlugin {
  readonly #transformer = new NulTransformer();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node);
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
