/**
 * The operation table: the one place that lists groups, operations and parameters.
 * Routes, WSDL, help pages, validation and the console's forms are all derived from it
 * (docs/wire-contract.md#endpoint-groups-and-operations). Parameter order is the wire order;
 * `TypeNotfication` is spelled as the interface spells it.
 */

/** How a parameter's value is checked; every parameter is a required string (docs/operations.md). */
export type ParamRule =
  /** Any string, the empty string included, up to MAX_TEXT_LENGTH characters. */
  | 'text'
  /** 1-16 ASCII letters or digits. */
  | 'code'
  /** A valid phone number, normalised to E.164. */
  | 'phone';

export interface ParamDef<Name extends string = string> {
  readonly name: Name;
  readonly rule: ParamRule;
  /** What the value means, for help pages and the console. */
  readonly description: string;
  /** A realistic value for forms and examples. */
  readonly example: string;
  /** Never stored or logged in clear (auth codes). */
  readonly secret?: true;
}

export interface OperationDef<Name extends string = string, Param extends string = string> {
  readonly name: Name;
  /** The group's service name, e.g. `AuthCodeSending`. */
  readonly group: string;
  readonly summary: string;
  readonly params: readonly ParamDef<Param>[];
}

export interface GroupDef {
  /** The service name: the path without `.asmx`. */
  readonly name: string;
  /** The path of the group, e.g. `/AuthCodeSending.asmx`. */
  readonly path: string;
  readonly title: string;
  readonly operations: readonly OperationDef[];
}

/**
 * The phone number printed as an example wherever no region is known (README, docs, this table,
 * the wire's error messages): a mobile of GB, libphonenumber's own example for GB, which the
 * default setup of GB (DEFAULT_PHONE_REGION=GB) sends codes to. Not +447911123456: that is a
 * Guernsey number, which that setup refuses (docs/security.md#sms-pumping).
 */
export const EXAMPLE_PHONE = '+447400123456';

const text = <const Name extends string>(
  name: Name,
  description: string,
  example: string,
): ParamDef<Name> => ({
  name,
  rule: 'text',
  description,
  example,
});

type OperationInput = Omit<OperationDef, 'group'>;

/** A group of the table; its operations keep their literal names and parameters' names. */
function group<const Ops extends readonly OperationInput[]>(
  name: string,
  title: string,
  ops: Ops,
): GroupDef & { readonly operations: { readonly [K in keyof Ops]: Ops[K] & { readonly group: string } } } {
  return {
    name,
    path: `/${name}.asmx`,
    title,
    operations: ops.map((op) => ({ ...op, group: name })) as never,
  };
}

const table = [
  group('AuthCodeSending', 'Authentication code sending', [
    {
      name: 'AuthCode',
      summary: 'Sends the code to the phone in an SMS.',
      params: [
        {
          name: 'code',
          rule: 'code',
          description: 'The verification code: 1 to 16 letters or digits.',
          example: '482913',
          secret: true,
        },
        {
          name: 'phone',
          rule: 'phone',
          description: 'The phone number, in international format (+ and country code).',
          example: EXAMPLE_PHONE,
        },
      ],
    },
  ]),
  group('BookPdf', 'Book PDF', [
    {
      name: 'GetBookPdfByTerm',
      summary: 'Returns the book PDF uploaded for the term and class.',
      params: [
        text('termId', 'The term.', '2026-1'),
        text('srid', 'The student registration id (recorded with the call).', 'S-1042'),
        text('classId', 'The class.', '7B'),
      ],
    },
  ]),
  group('NotificationNotes', 'Notification notes', [
    {
      name: 'SendNotificationType',
      summary: "Sends a push notification of the given type about an item to the school's topic.",
      params: [
        text('id', 'The item the notification is about.', '1201'),
        text('baseUrlSchool', "The school's base URL, as registered.", 'https://school.example.org/'),
        text('TypeNotfication', 'The notification type.', 'homework'),
      ],
    },
    {
      name: 'SendMarkNotes',
      summary: "Sends a 'new marks' push notification to the class's topic of the school.",
      params: [
        text('id', 'The marks entry.', '88'),
        text('id_class', 'The class.', '7B'),
        text('baseUrlSchool', "The school's base URL, as registered.", 'https://school.example.org/'),
      ],
    },
  ]),
  group('PushNotificationMobile', 'Mobile push notification', [
    {
      name: 'pushNoti',
      summary: 'Dispatches every pending push notification now, retries included.',
      params: [],
    },
  ]),
] as const;

export const groups: readonly GroupDef[] = table;
export const operations: readonly OperationDef[] = groups.flatMap((g) => g.operations);

/** Every operation of the table, with its literal name and parameter names. */
type TableOperation = (typeof table)[number]['operations'][number];

/** The operations' names: `'AuthCode' | 'GetBookPdfByTerm' | …`. */
export type OperationName = TableOperation['name'];

/**
 * An operation's parameters as validated values, typed from the table: renaming a parameter in
 * the table is a compile error wherever the old name is read.
 */
export type ParamsOf<Name extends OperationName> = {
  readonly [P in Extract<TableOperation, { name: Name }>['params'][number]['name']]: string;
};

/** The names of the parameters never stored or logged in clear (auth codes), of some operations. */
export function secretParamNames(of: readonly OperationDef[] = operations): string[] {
  return [...new Set(of.flatMap((op) => op.params.filter((p) => p.secret).map((p) => p.name)))];
}

const groupsByLowerName = new Map(groups.map((g) => [g.name.toLowerCase(), g]));

/** The group named by a service name, matched case-insensitively as IIS matched `.asmx` paths. */
export function findGroup(serviceName: string): GroupDef | undefined {
  return groupsByLowerName.get(serviceName.toLowerCase());
}

/** The operation of a group, matched case-sensitively as ASMX did. */
export function findOperation(group: GroupDef, name: string): OperationDef | undefined {
  return group.operations.find((op) => op.name === name);
}

/** An operation by name across all groups (names are unique). */
export function operationByName(name: string): OperationDef | undefined {
  return operations.find((op) => op.name === name);
}
