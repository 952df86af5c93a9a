// NetSharp.g4 -- the ANTLR4 grammar of Net#, the network description language
// of Azure Machine Learning Studio, as netc accepts it (docs/language.md, which
// also lists where netc departs from the original).
//
// The grammar is deliberately a little wider than the language: where a user
// is likely to misspell a keyword (statement keywords, output functions, bundle
// kinds) an identifier is accepted in its place, so the parser recovers
// perfectly and Sema reports the misspelling with a did-you-mean fix-it.
// Everything the grammar accepts beyond the language is rejected by Sema.
grammar NetSharp;

// NUMBER_LIST is no lexer rule: the parser's token stream puts it in place of
// a long tuple of plain numbers, `[1, -2.5, 3, ...]` (frontend/Lexer.h,
// foldNumberTuples), so that a tuple of a million weights costs one token and
// no parse tree; the AST builder reads its items back from its text.
tokens { NUMBER_LIST }

program : statement* EOF ;

statement
  : constDecl
  | shareDecl
  | layerDecl
  | SEMI                                                   // stray ';' (D12)
  ;

// `const X = e;` or `const { X = e; Y = e; }`.  An identifier in the keyword's
// place (e.g. `Const`) is a misspelled keyword.
constDecl
  : kw=(CONST | IDENT) constItem SEMI
  | kw=(CONST | IDENT) LBRACE (constItem SEMI)* RBRACE SEMI?
  ;
constItem : name=IDENT ASSIGN expr ;

// `input X [..];`, `hidden H [..] fn from ...`, and grouped blocks
// `hidden { H1 ...; H2 ...; }`.  Inputs share the trainable layers' syntax so
// that an input with bundles is a semantic error, not a syntax error.
layerDecl
  : kw=(INPUT | HIDDEN_LAYER | OUTPUT | IDENT) layerBody
  | kw=(INPUT | HIDDEN_LAYER | OUTPUT | IDENT) LBRACE layerBody* RBRACE SEMI?
  | bareLayer                                              // the keyword is missing
  ;
// The shape is optional here only so that a missing one is reported clearly.
layerBody : name=IDENT shape? activation? layerTail ;
// A layer without its keyword; the shape is required so that stray words
// left by error recovery are not taken for layers.
bareLayer : name=IDENT shape activation? layerTail ;
layerTail
  : SEMI                                                   // no bundles
  | bundle                                                 // short form
  | LBRACE layerItem* RBRACE SEMI?                         // block form
  ;
layerItem : layerAttr | bundle ;
layerAttr : name=IDENT ASSIGN expr SEMI ;                   // `Biases = C;`

// An identifier in the place of a shape (e.g. `Auto`) is reported by the front end.
shape : AUTO | IDENT | LBRACK expr (COMMA expr)* RBRACK ;

activation
  : fn=(SIGMOID | LINEAR | SOFTMAX | RLINEAR | SQUARE | SQRT | SRLINEAR
       | ABS | TANH | BRLINEAR | IDENT)
  ;

// An identifier in the place of `from` (e.g. `From`) is a misspelled keyword.
bundle : kw=(FROM | IDENT) source=IDENT bundleKind ;
bundleKind
  : ALL (SEMI | attrBlock)                                 # allBundle
  | WHERE lambda (SEMI | attrBlock)                        # whereBundle
  | CONVOLVE attrBlock                                     # convolveBundle
  | MAX POOL attrBlock                                     # maxPoolBundle
  | MEAN POOL attrBlock                                    # meanPoolBundle
  | RESPONSE NORM attrBlock                                # responseNormBundle
  | kind=IDENT second=(POOL | NORM | IDENT)? lambda? (SEMI | attrBlock)  # unknownBundle
  ;
attrBlock : LBRACE attr* RBRACE SEMI? ;
attr : name=IDENT ASSIGN expr SEMI ;
lambda : LPAREN src=IDENT COMMA dst=IDENT RPAREN ARROW expr ;

shareDecl : kw=(SHARE | IDENT) LBRACE (shareItem (COMMA shareItem)*)? RBRACE SEMI? ;
shareItem
  : layer=IDENT                                            # layerShare
  | src=IDENT ARROW dst=IDENT                              # bundleShare
  | one=INT ARROW dst=IDENT                                # biasShare
  ;

// Precedence (D2), highest first; ANTLR gives earlier alternatives priority.
expr
  : primary                                                # primaryExpr
  | <assoc=right> lhs=expr op=POW rhs=expr                 # binaryExpr
  | op=(MINUS | NOT) operand=expr                          # unaryExpr
  | lhs=expr op=(MUL | DIV | MOD) rhs=expr                 # binaryExpr
  | lhs=expr op=(PLUS | MINUS) rhs=expr                    # binaryExpr
  | lhs=expr op=(LT | LE | GT | GE) rhs=expr               # binaryExpr
  | lhs=expr op=(EQ | NE) rhs=expr                         # binaryExpr
  | lhs=expr op=AND rhs=expr                               # binaryExpr
  | lhs=expr op=OR rhs=expr                                # binaryExpr
  ;
primary
  : INT                                                    # intLiteral
  | REAL                                                   # realLiteral
  | value=(TRUE | FALSE)                                   # boolLiteral
  | callee=(IDENT | ABS | MAX | SIGMOID | LINEAR | SOFTMAX | RLINEAR | SQUARE | SQRT
            | SRLINEAR | TANH | BRLINEAR) LPAREN (expr (COMMA expr)*)? RPAREN   # callExpr
  | name=IDENT LBRACK index=expr RBRACK                    # indexExpr
  | name=IDENT                                             # nameExpr
  | LPAREN expr RPAREN                                     # parenExpr
  | LBRACK expr (COMMA expr)* RBRACK                       # tupleExpr
  | NUMBER_LIST                                            # numberListExpr
  ;

// ---- Lexer -----------------------------------------------------------------
CONST    : 'const' ;
INPUT    : 'input' ;
HIDDEN_LAYER   : 'hidden' ;
OUTPUT   : 'output' ;
AUTO     : 'auto' ;
FROM     : 'from' ;
ALL      : 'all' ;
WHERE    : 'where' ;
CONVOLVE : 'convolve' ;
MAX      : 'max' ;
MEAN     : 'mean' ;
POOL     : 'pool' ;
RESPONSE : 'response' ;
NORM     : 'norm' ;
SHARE    : 'share' ;
TRUE     : 'true' ;
FALSE    : 'false' ;
SIGMOID  : 'sigmoid' ;
LINEAR   : 'linear' ;
SOFTMAX  : 'softmax' ;
RLINEAR  : 'rlinear' ;
SQUARE   : 'square' ;
SQRT     : 'sqrt' ;
SRLINEAR : 'srlinear' ;
ABS      : 'abs' ;
TANH     : 'tanh' ;
BRLINEAR : 'brlinear' ;

ARROW  : '=>' ;
EQ     : '==' ;
NE     : '!=' ;
LE     : '<=' ;
GE     : '>=' ;
AND    : '&&' ;
OR     : '||' ;
ASSIGN : '=' ;
LT     : '<' ;
GT     : '>' ;
NOT    : '!' ;
PLUS   : '+' ;
MINUS  : '-' ;
MUL    : '*' ;
DIV    : '/' ;
MOD    : '%' ;
POW    : '^' ;
SEMI   : ';' ;
COMMA  : ',' ;
LBRACE : '{' ;
RBRACE : '}' ;
LBRACK : '[' ;
RBRACK : ']' ;
LPAREN : '(' ;
RPAREN : ')' ;

REAL
  : DIGIT+ '.' DIGIT* EXPONENT?
  | '.' DIGIT+ EXPONENT?
  | DIGIT+ EXPONENT
  ;
INT   : DIGIT+ ;
IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

fragment DIGIT    : [0-9] ;
fragment EXPONENT : [eE] [+-]? DIGIT+ ;

LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
WS            : [ \t\r\n\f]+ -> channel(HIDDEN) ;

// An unterminated block comment and any other character become hidden tokens
// of their own, so the lexer never fails; the front end reports them located.
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF -> channel(HIDDEN) ;
// `# ...`, a comment in other languages' syntax, is one token to the end of
// the line: one error with a fix-it, and its words are not parsed.
HASH_COMMENT : '#' ~[\r\n]* -> channel(HIDDEN) ;
ERROR_CHAR : . -> channel(HIDDEN) ;
