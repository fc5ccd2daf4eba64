import { registerCallAnswer, type Store } from '../store/index.js';

/**
 * The canonical answers this instance records by reference, and their ids in `call_answers`
 * (store/call-answers.ts). An answer is canonical when its record's text is the same for every call
 * of its kind: a success's, in its binding (routes/asmx/answers.ts builds each once, with
 * canonicalResponseOf in recording/exchange.ts). A call answered with one keeps its id instead of
 * its text, unless masking changed the text (it echoed a code: recordExchange). The texts are
 * only those built at start, so the maps stay a few entries long.
 */
export interface CanonicalAnswers {
  /**
   * The id of a canonical answer's text: at once when this instance knows it, else once it is
   * added (the first call of each kind waits for that); undefined when it could not be (the
   * database away), and for a few seconds after: the call then records the text itself.
   */
  refOf(text: string): number | undefined | Promise<number | undefined>;
  /** The text of an id this instance has recorded calls with (the live tail's rows). */
  textOf(id: number): string | undefined;
}

/** After a failure to add a text, its calls record the text itself for this long before trying again. */
const RETRY_AFTER_MS = 5000;

export function createCanonicalAnswers(store: Pick<Store, 'work'>): CanonicalAnswers {
  const ids = new Map<string, number>();
  const texts = new Map<number, string>();
  const adding = new Map<string, Promise<number | undefined>>();
  const failedAt = new Map<string, number>();
  return {
    refOf(text) {
      const known = ids.get(text);
      if (known !== undefined) return known;
      const under = adding.get(text);
      if (under) return under;
      const failed = failedAt.get(text);
      if (failed !== undefined && Date.now() - failed < RETRY_AFTER_MS) return undefined;
      const added = registerCallAnswer(store.work, text).then(
        (id) => {
          ids.set(text, id);
          texts.set(id, text);
          failedAt.delete(text);
          return id;
        },
        () => {
          failedAt.set(text, Date.now());
          return undefined;
        },
      );
      adding.set(text, added);
      void added.finally(() => adding.delete(text));
      return added;
    },
    textOf: (id) => texts.get(id),
  };
}
