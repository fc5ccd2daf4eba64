/** Exit statuses of `pnpm admin`, as its --help tells them. */
export const EXIT = { done: 0, failed: 1, unknownUser: 2, refused: 3, damaged: 4 } as const;

/** A problem with a message for the operator, and the exit status it means. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}
