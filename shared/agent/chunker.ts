/**
 * Cuts streaming LLM text into speakable pieces so TTS starts before the model finishes: at
 * sentence ends, and at clause boundaries once a piece is long enough. The first piece of a turn is
 * cut earlier (shorter minimum) because first-audio latency matters most there.
 */
const SENTENCE_END = /[.!?…]["')\]]?(?=\s)/g;
const CLAUSE_END = /[,;:—–](?=\s)/g;
/** Abbreviations whose period is not a sentence end. */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'st', 'jr', 'sr', 'vs', 'etc', 'e.g', 'i.e', 'no', 'approx']);

export interface ChunkerOptions {
  /** Minimum characters before a clause boundary may cut the first piece. Default 24. */
  firstClauseMinChars?: number;
  /** Minimum characters before a clause boundary may cut later pieces. Default 60. */
  clauseMinChars?: number;
  /** Hard cut (at the last space) when no boundary shows up. Default 240. */
  maxChars?: number;
}

export class SentenceChunker {
  private buf = '';
  private emitted = 0;
  private readonly firstClauseMin: number;
  private readonly clauseMin: number;
  private readonly maxChars: number;

  constructor(opts: ChunkerOptions = {}) {
    this.firstClauseMin = opts.firstClauseMinChars ?? 24;
    this.clauseMin = opts.clauseMinChars ?? 60;
    this.maxChars = opts.maxChars ?? 240;
  }

  /** Adds streamed text; returns the pieces now complete (possibly none). */
  push(delta: string): string[] {
    this.buf += delta;
    const out: string[] = [];
    for (;;) {
      const cut = this.findCut();
      if (cut <= 0) break;
      const piece = this.buf.slice(0, cut).trim();
      this.buf = this.buf.slice(cut);
      if (piece) {
        out.push(piece);
        this.emitted++;
      }
    }
    return out;
  }

  /** The rest, at the end of the stream. */
  flush(): string[] {
    const piece = this.buf.trim();
    this.buf = '';
    if (!piece) return [];
    this.emitted++;
    return [piece];
  }

  reset(): void {
    this.buf = '';
    this.emitted = 0;
  }

  private findCut(): number {
    SENTENCE_END.lastIndex = 0;
    for (let m = SENTENCE_END.exec(this.buf); m; m = SENTENCE_END.exec(this.buf)) {
      const end = m.index + m[0].length;
      if (!this.isAbbreviation(m.index) && !this.isDecimal(m.index)) return end;
    }
    const clauseMin = this.emitted === 0 ? this.firstClauseMin : this.clauseMin;
    if (this.buf.length >= clauseMin) {
      CLAUSE_END.lastIndex = 0;
      let last = -1;
      for (let m = CLAUSE_END.exec(this.buf); m; m = CLAUSE_END.exec(this.buf)) {
        const end = m.index + m[0].length;
        if (end >= clauseMin) {
          last = end;
          break;
        }
      }
      if (last > 0) return last;
    }
    if (this.buf.length > this.maxChars) {
      const space = this.buf.lastIndexOf(' ', this.maxChars);
      return space > 0 ? space : this.maxChars;
    }
    return -1;
  }

  private isAbbreviation(dotIndex: number): boolean {
    if (this.buf[dotIndex] !== '.') return false;
    const before = this.buf.slice(0, dotIndex);
    const word = /([A-Za-z.]+)$/.exec(before)?.[1]?.toLowerCase();
    return word !== undefined && (ABBREVIATIONS.has(word) || /^[a-z]$/.test(word));
  }

  private isDecimal(dotIndex: number): boolean {
    return this.buf[dotIndex] === '.' && /\d/.test(this.buf[dotIndex - 1] ?? '') && /\d/.test(this.buf[dotIndex + 1] ?? '');
  }
}
