;;; netc-mode.el --- Net# files in Emacs, with netc's language server through Eglot  -*- lexical-binding: t; -*-

;; This file is part of netc (editors/emacs/netc-mode.el).

;;; Commentary:

;; A major mode for Net# network descriptions (*.net): comments, syntax
;; highlighting, and the registration of `netc lsp' with Eglot, which then
;; gives diagnostics (Flymake), hover (ElDoc), go to definition and
;; references (xref), rename, completion and formatting.
;;
;; Eglot is built into Emacs 29 and later.  Emacs 28 needs the `eglot'
;; package: on Debian 12, `apt install elpa-eglot' (Eglot 1.9); elsewhere
;; M-x package-install RET eglot.  Tested in batch mode with Debian 12's
;; Emacs 28.2 and elpa-eglot 1.9 (tests/editors/emacs_test.el).
;;
;; Use, in init.el:
;;
;;   (add-to-list 'load-path "/path/to/netc/editors/emacs")
;;   (require 'netc-mode)
;;   (setq netc-program "/path/to/netc")      ; unless netc is on PATH
;;   (add-hook 'netsharp-mode-hook #'eglot-ensure)

;;; Code:

(defgroup netc nil
  "Net# network descriptions and the netc language server."
  :group 'languages
  :prefix "netc-")

(defcustom netc-program "netc"
  "The netc executable Eglot starts as `netc lsp': a name on PATH or a file name."
  :type 'string)

(defcustom netc-lsp-arguments nil
  "Extra arguments after `netc lsp', e.g. (\"--debounce-ms\" \"50\")."
  :type '(repeat string))

(defconst netsharp-mode--keywords
  '("const" "input" "hidden" "output" "share" "from" "all" "where" "convolve"
    "max" "mean" "pool" "response" "norm" "auto")
  "Net# keywords.")

(defvar netsharp-mode-syntax-table
  (let ((table (make-syntax-table)))
    ;; // line comments and /* block */ comments.
    (modify-syntax-entry ?/ ". 124b" table)
    (modify-syntax-entry ?* ". 23" table)
    (modify-syntax-entry ?\n "> b" table)
    (modify-syntax-entry ?_ "_" table)
    table)
  "Syntax table of `netsharp-mode'.")

(defvar netsharp-mode-font-lock-keywords
  `((,(regexp-opt netsharp-mode--keywords 'symbols) . font-lock-keyword-face)
    (,(regexp-opt '("true" "false") 'symbols) . font-lock-constant-face)
    ("\\_<\\(?:input\\|hidden\\|output\\)\\_>[ \t]+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     1 font-lock-variable-name-face)
    ("\\_<const\\_>[ \t]+\\(\\(?:\\sw\\|\\s_\\)+\\)" 1 font-lock-constant-face))
  "Highlighting of `netsharp-mode'.")

;;;###autoload
(define-derived-mode netsharp-mode prog-mode "Net#"
  "Major mode for Net# network descriptions (netc).
With Eglot, `eglot-ensure' in `netsharp-mode-hook' starts `netc lsp'."
  (setq-local comment-start "// ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(//+\\|/\\*+\\)\\s *")
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults '(netsharp-mode-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.net\\'" . netsharp-mode))

(defun netc-mode--eglot-contact (&optional _interactive)
  "The command Eglot runs for `netsharp-mode' buffers: `netc lsp'."
  (append (list netc-program "lsp") netc-lsp-arguments))

(defvar eglot-server-programs)

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '(netsharp-mode . netc-mode--eglot-contact)))

(provide 'netc-mode)

;;; netc-mode.el ends here
