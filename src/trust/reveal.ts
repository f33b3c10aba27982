import { showInvisible, stripInvisible } from './visible-text.js';

/**
 * A JSON value for an operator's review: every string (keys too) that carries a hidden character
 * is shown with its escapes (`\u200b`), so what an upstream hid is seen, not passed on.
 */
export function revealInvisible<T>(value: T): T {
  if (typeof value === 'string') return (stripInvisible(value) === value ? value : showInvisible(value)) as T;
  if (Array.isArray(value)) return value.map((item) => revealInvisible(item)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [revealInvisible(key), revealInvisible(item)])) as T;
  }
  return value;
}
