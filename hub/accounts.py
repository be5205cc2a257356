"""The class's Unix accounts: one instructor and the students, each with a private home.

A roster is a text file, one account a line: ``instructor NAME [PASSWORD]`` or
``student NAME [PASSWORD]`` (``#`` starts a comment). An account without a password
gets a generated one, written to ``state/passwords.txt`` (readable by root only)
and printed once. Separate Unix users are what keeps students apart: a home is
mode 0700, so no other student, and no process of theirs, can read it.

    python -m hub.accounts ROSTER [--root DIR]     # add the accounts (also done by ``make hub``)
    python -m hub.accounts ROSTER --remove         # delete them and their homes
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hub.layout import Layout

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")      # a Unix name nbgrader can use (no '+')


@dataclass(frozen=True)
class Account:
    role: str            # "instructor" or "student"
    name: str
    password: str


class RosterError(ValueError):
    pass


def read_roster(path: Path) -> list:
    accounts = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}, line {number}"
        if len(words) not in (2, 3) or words[0] not in ("instructor", "student"):
            raise RosterError(f"{where}: expected 'instructor NAME [PASSWORD]' or "
                              f"'student NAME [PASSWORD]', got {line.strip()!r}")
        if not NAME.match(words[1]):
            raise RosterError(f"{where}: {words[1]!r} is not a usable account name: use lower-case "
                              "letters, digits, '-' and '_', starting with a letter, at most 31")
        accounts.append(Account(words[0], words[1], words[2] if len(words) == 3 else ""))
    instructors = [a.name for a in accounts if a.role == "instructor"]
    if len(instructors) != 1:
        raise RosterError(f"{path}: name exactly one instructor (found {len(instructors)})")
    names = [a.name for a in accounts]
    if len(set(names)) != len(names):
        raise RosterError(f"{path}: a name appears twice: " +
                          ", ".join(sorted({n for n in names if names.count(n) > 1})))
    return accounts


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def create(layout: Layout, accounts: list) -> list:
    """Make every account that does not exist yet; return the names made."""
    layout.homes.mkdir(parents=True, exist_ok=True)
    os.chmod(layout.homes, 0o755)
    created, generated = [], []
    for account in accounts:
        home = layout.home(account.name)
        if exists(account.name):
            if Path(pwd.getpwnam(account.name).pw_dir) != home:
                raise RosterError(f"the account {account.name} already exists with another home "
                                  f"({pwd.getpwnam(account.name).pw_dir}); pick another name")
        else:
            subprocess.run(["useradd", "--home-dir", str(home), "--create-home", "--shell", "/bin/bash",
                            "--user-group", account.name], check=True)
            password = account.password or secrets.token_urlsafe(12)
            subprocess.run(["chpasswd"], input=f"{account.name}:{password}\n", text=True, check=True)
            created.append(account.name)
            if not account.password:
                generated.append(f"{account.name} {password}\n")
        os.chmod(home, 0o700)
    roster = {"instructor": next(a.name for a in accounts if a.role == "instructor"),
              "students": [a.name for a in accounts if a.role == "student"]}
    layout.roster.write_text(json.dumps(roster, indent=1) + "\n")
    if generated:
        with open(layout.passwords, "a") as f:
            os.fchmod(f.fileno(), 0o600)
            f.writelines(generated)
    return created


def remove(layout: Layout, names: list):
    for name in names:
        if exists(name):
            pids = subprocess.run(["pgrep", "-u", name], capture_output=True, text=True).stdout.split()
            for pid in pids:                             # what is left of their servers and kernels
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["userdel", name], check=False, capture_output=True)
        shutil.rmtree(layout.home(name), ignore_errors=True)


def roles(layout: Layout) -> dict:
    """{"instructor": NAME, "students": [NAMES]} as the last roster made them."""
    return json.loads(layout.roster.read_text())


def as_user(name: str, command: list, cwd: Path, env: dict | None = None, **kwargs):
    """Run a command as that account (the hub's prepare step and the tests use it)."""
    entry = pwd.getpwnam(name)
    environment = {"HOME": entry.pw_dir, "USER": name, "LOGNAME": name, "LANG": "C.UTF-8",
                   "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
    return subprocess.run(command, cwd=cwd, env=environment, user=entry.pw_uid, group=entry.pw_gid,
                          extra_groups=[], **kwargs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roster")
    parser.add_argument("--root", help="the hub's root folder (default: $COURSE_HUB_ROOT or /srv/rnnlm-course)")
    parser.add_argument("--remove", action="store_true", help="delete the roster's accounts and homes")
    args = parser.parse_args(argv)
    layout = Layout.at(args.root)
    try:
        accounts = read_roster(Path(args.roster))
    except (OSError, RosterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.remove:
        remove(layout, [a.name for a in accounts])
        return 0
    layout.state.mkdir(parents=True, exist_ok=True)
    for name in create(layout, accounts):
        print(f"created the account {name}")
    if layout.passwords.exists():
        print(f"generated passwords are in {layout.passwords} (root only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
