-- Throttles shared across replicas (issue 17): with several control planes
-- on one PostgreSQL, each counted failed sign-ins and invitation guesses
-- on its own, giving an attacker N times the allowance. On PostgreSQL the
-- counts live here, one row per throttled subject (an account's email or a
-- client address) and throttle name; SQLite, one process, keeps counting
-- in memory and leaves the table empty.
--
-- in_flight counts attempts begun and not yet settled; in_flight_until
-- lets them lapse if the replica that began them died. A row whose window
-- and lockout have passed is deleted by the next sweep.
CREATE TABLE auth_throttles (
    name            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    failures        INTEGER NOT NULL,
    in_flight       INTEGER NOT NULL,
    in_flight_until {{.Time}} NOT NULL,
    first_at        {{.Time}} NOT NULL,
    locked_until    {{.Time}},
    PRIMARY KEY (name, subject)
);
CREATE INDEX auth_throttles_first_at ON auth_throttles (first_at);
