/** A store location as shown to people: a PostgreSQL URL's password hidden. */
export function hidePassword(location: string): string {
  return location.replace(/(\/\/[^:/@]+):[^@/]*@/, '$1:***@');
}
