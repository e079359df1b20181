#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal of a given size and drives it, for
the e2e tests of `sandbox-libkrun shell`.

usage: pty-drive.py ROWS COLS STEPS_JSON -- CMD ARGS...

STEPS_JSON is a list of ["expect", REGEX] (waits up to 90 s for the screen
to match, from the last match on), ["send", TEXT] and ["resize", ROWS, COLS]
(the terminal's new size, then SIGWINCH to the command).  Prints one JSON
line: {"code": exit status, "screen": what the command printed,
"restored": whether the terminal's modes are as before it ran,
"failed": the step that timed out or null}.
"""
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))


def main():
    rows, cols, steps = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
    cmd = sys.argv[sys.argv.index('--') + 1:]
    master, slave = os.openpty()
    set_size(slave, rows, cols)
    before = termios.tcgetattr(slave)

    def child_setup():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                         preexec_fn=child_setup)
    screen = b''
    seen = 0
    failed = None

    def pump(timeout):
        """Reads what the command printed; False when nothing came."""
        nonlocal screen
        r, _, _ = select.select([master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        screen += data
        return len(data) > 0

    for step in steps:
        if step[0] == 'send':
            os.write(master, step[1].encode())
        elif step[0] == 'resize':
            set_size(master, step[1], step[2])
            os.kill(p.pid, signal.SIGWINCH)
        elif step[0] == 'expect':
            rx = re.compile(step[1].encode())
            deadline = time.time() + 90
            m = rx.search(screen, seen)
            while m is None and time.time() < deadline:
                exited = p.poll() is not None
                pump(0.2)
                m = rx.search(screen, seen)
                if exited:
                    break
            if m is None:
                failed = step
                break
            seen = m.end()
    if failed is not None:
        p.kill()
    try:
        code = p.wait(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill()
        code = p.wait()
        failed = failed or ['exit']
    while pump(0.1):
        pass
    after = termios.tcgetattr(slave)
    print(json.dumps({'code': code, 'screen': screen.decode('utf-8', 'replace'), 'restored': before == after,
                      'failed': failed}))


main()
