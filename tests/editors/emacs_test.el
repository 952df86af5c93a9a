;;; emacs_test.el --- the Emacs recipe (editors/emacs/netc-mode.el) with the real Eglot  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by run_editor_test.sh as `emacs --batch -Q -l emacs_test.el' with
;; NETC (the netc binary), NETC_RECIPE (netc-mode.el) and NETC_TEST_FILE (a
;; scratch .net file to create) in the environment.  Opens a .net file with
;; an error through the recipe (netsharp-mode, eglot-ensure), waits for
;; netc's diagnostic in Flymake (code, region, the note in the message),
;; hovers a layer (the raw response and the text ElDoc shows), and renames a
;; layer with `eglot-rename'.  Exits 0 when every check passes, 1 with a
;; message otherwise, and 77 (skipped) when Eglot cannot be loaded.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defconst netc-test-server-wait 60
  "Seconds to wait for the server: the test's one time limit.")

(defun netc-test-say (format-string &rest args)
  (princ (concat "emacs_test: " (apply #'format format-string args) "\n")))

(defun netc-test-check (condition format-string &rest args)
  (unless condition
    (error "%s" (apply #'format format-string args))))

(defun netc-test-wait (what condition)
  "Wait for CONDITION to return non-nil while processing the server's output."
  (let ((deadline (+ (float-time) netc-test-server-wait)) result)
    (while (and (not (setq result (funcall condition)))
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (netc-test-check result "no %s from netc lsp within %d s" what netc-test-server-wait)
    result))

;; Eglot: built in from Emacs 29; Emacs 28 needs the eglot package, which
;; Debian's elpa-eglot installs under /usr/share/emacs/site-lisp/elpa (-Q
;; leaves that folder out, so activate the packages there).
(unless (require 'eglot nil t)
  (require 'package)
  (let ((package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
        (package-user-dir (expand-file-name "elpa" (or (getenv "HOME") temporary-file-directory))))
    (package-initialize))
  (unless (require 'eglot nil t)
    (princ (format "SKIPPED: Eglot is not available in Emacs %s (Emacs 28 needs Debian's elpa-eglot; scripts/setup.sh installs it)\n"
                   emacs-version)
           #'external-debugging-output)
    (kill-emacs 77)))

(defun netc-test-run ()
  (let ((netc (getenv "NETC")) (recipe (getenv "NETC_RECIPE")) (file (getenv "NETC_TEST_FILE")))
    (netc-test-check (and netc recipe file) "NETC, NETC_RECIPE and NETC_TEST_FILE must be set")
    (netc-test-say "Emacs %s, Eglot %s" emacs-version
                   (let ((package (and (boundp 'package-alist) (cadr (assq 'eglot package-alist)))))
                     (if package
                         (package-version-join (package-desc-version package))
                       (concat "built in, " (locate-library "eglot")))))
    ;; A second definition of H: error NS0301 on line 3, with a note at line 2.
    (with-temp-file file
      (insert "input X [4];\nhidden H [2] from X all;\nhidden H [3] from X all;\noutput O [1] from H all;\n"))

    ;; The recipe, as docs/editors.md says to use it.
    (load recipe nil t)
    (setq netc-program netc)
    (add-hook 'netsharp-mode-hook #'eglot-ensure)
    (setq eglot-sync-connect t
          eglot-connect-timeout netc-test-server-wait)

    (find-file file)
    (netc-test-check (eq major-mode 'netsharp-mode) "the .net file opened in %s" major-mode)
    ;; eglot-ensure connects after the command that opened the file.
    (run-hooks 'post-command-hook)
    (let ((server (netc-test-wait "connection" #'eglot-current-server)))
      (netc-test-check (equal (process-command (jsonrpc--process server))
                              (list netc "lsp"))
                       "Eglot started %S" (process-command (jsonrpc--process server)))

      ;; Diagnostics, through Flymake.
      (flymake-start)
      (let* ((diagnostics (netc-test-wait "Flymake diagnostics" #'flymake-diagnostics))
             (d (car diagnostics))
             (line3 (save-excursion (goto-char (point-min)) (forward-line 2) (point))))
        (netc-test-check (= (length diagnostics) 1) "expected 1 diagnostic, got %S" diagnostics)
        (netc-test-check (eq (flymake-diagnostic-type d) 'eglot-error) "diagnostic type %S"
                         (flymake-diagnostic-type d))
        (netc-test-check (and (= (flymake-diagnostic-beg d) (+ line3 7))
                              (= (flymake-diagnostic-end d) (+ line3 8)))
                         "diagnostic region %d-%d, expected %d-%d" (flymake-diagnostic-beg d)
                         (flymake-diagnostic-end d) (+ line3 7) (+ line3 8))
        ;; Eglot declares no relatedInformation, so the note is in the message.
        (netc-test-check (equal (flymake-diagnostic-text d)
                                "netc [NS0301]: redefinition of layer 'H'\nnote: 2:8: previous definition is here")
                         "diagnostic text %S" (flymake-diagnostic-text d))
        (netc-test-say "diagnostic ok: %S" (flymake-diagnostic-text d)))

      ;; Hover on `X' in `from X' (line 2, column 18): Eglot without
      ;; markdown-mode asks for plain text, and gets it.
      (goto-char (point-min))
      (forward-line 1)
      (forward-char 18)
      (let* ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams)))
             (contents (plist-get hover :contents)))
        (netc-test-check (equal (plist-get contents :kind) "plaintext") "hover kind %S" contents)
        (netc-test-check (equal (plist-get contents :value) "input layer X [4]\n\n- nodes: 4\n")
                         "hover value %S" (plist-get contents :value))
        ;; What ElDoc shows for it.
        (let ((shown (eglot--hover-info contents)))
          (netc-test-check (equal (substring-no-properties shown) "input layer X [4]\n\n- nodes: 4")
                           "ElDoc shows %S" shown))
        (netc-test-say "hover ok: %S" (plist-get contents :value)))

      ;; Rename X (its declaration, line 1 column 6) to Pixels.
      (goto-char (point-min))
      (forward-char 6)
      (eglot-rename "Pixels")
      (netc-test-check (equal (buffer-substring-no-properties (point-min) (point-max))
                              (concat "input Pixels [4];\nhidden H [2] from Pixels all;\n"
                                      "hidden H [3] from Pixels all;\noutput O [1] from H all;\n"))
                       "after the rename the buffer reads %S" (buffer-string))
      (netc-test-say "rename ok")
      (set-buffer-modified-p nil)
      (eglot-shutdown server))))

(condition-case err
    (progn
      (netc-test-run)
      (netc-test-say "all checks passed")
      (kill-emacs 0))
  (error
   (princ (format "emacs_test: FAILED: %s\n" (error-message-string err)) #'external-debugging-output)
   (kill-emacs 1)))

;;; emacs_test.el ends here
