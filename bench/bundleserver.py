#!/usr/bin/env python3
# bundleserver.py - serve a directory of bundle files over http, for tests
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Serve the files of a directory on 127.0.0.1, as a clone bundle host does.

    bundleserver.py DIR PORTFILE [--cut NAME]...

Listens on a free port and writes it to PORTFILE once it accepts
connections.  A file named with ``--cut`` is announced whole (its
Content-Length) but only half of it is sent before the connection is
closed: a download cut short.  Runs until killed.
"""

import argparse
import http.server
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('directory')
    parser.add_argument('portfile')
    parser.add_argument('--cut', action='append', default=[])
    args = parser.parse_args()
    root = os.path.abspath(args.directory)
    cut = set(args.cut)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            name = self.path.lstrip('/')
            path = os.path.join(root, name)
            if '/' in name or not os.path.isfile(path):
                self.send_error(404)
                return
            with open(path, 'rb') as fp:
                data = fp.read()
            self.send_response(200)
            self.send_header('Content-Type', 'application/octet-stream')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            if name in cut:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)

        def log_message(self, format, *args):
            sys.stderr.write('%s\n' % (format % args))

    server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
    tmp = args.portfile + '.tmp'
    with open(tmp, 'w') as fp:
        fp.write('%d\n' % server.server_address[1])
    os.rename(tmp, args.portfile)
    server.serve_forever()


if __name__ == '__main__':
    main()
